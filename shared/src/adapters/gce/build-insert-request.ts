// The seed's pure buildInsertRequest (§5): InstanceRequest → instances.insert request. No I/O, so the
// exact request GCE receives is pinned down by unit tests.
import type { protos } from '@google-cloud/compute';
import type { InstanceRequest } from '../../domain/reconcile/types.js';
import {
  LABEL_MANAGED_BY,
  LABEL_NAME,
  LABEL_SPEC_HASH,
  LABEL_UID,
  MANAGED_BY,
  METADATA_CREDENTIALS_SECRET,
  METADATA_PROXY_PORT,
  METADATA_STARTUP_SCRIPT,
  NETWORK_TAG,
} from './labels.js';

type InsertInstanceRequest = protos.google.cloud.compute.v1.IInsertInstanceRequest;

export interface InsertOptions {
  project: string;
  /** Network for the NIC; the default VPC unless Terraform made one. */
  network?: string;
  subnetwork?: string;
  /** The VM's identity: it reads the credentials secret with it (roles/secretmanager.secretAccessor). */
  serviceAccountEmail?: string;
}

const CLOUD_PLATFORM = 'https://www.googleapis.com/auth/cloud-platform';

/** Metadata that keeps project-wide SSH keys off the proxy VMs (GCE guest environment reads both). */
export const HOST_ACCESS_METADATA = [
  { key: 'block-project-ssh-keys', value: 'TRUE' },
  { key: 'enable-oslogin', value: 'TRUE' },
] as const;

export function buildInsertRequest(req: InstanceRequest, opts: InsertOptions): InsertInstanceRequest {
  const metadata = [
    { key: METADATA_STARTUP_SCRIPT, value: req.startupScript },
    { key: METADATA_PROXY_PORT, value: String(req.port) },
    // No way in by the project's SSH keys: no firewall rule opens port 22, but docs/cloud-init.md tells an
    // operator who needs SSH to add an IAP rule, and then every key in project metadata (gcloud compute ssh
    // adds one per user, for any VM) would be root on every internet-facing proxy. OS Login instead: IAM
    // decides who may log in, per proxy.
    ...HOST_ACCESS_METADATA,
  ];
  if (req.credentialsSecret)
    metadata.push({ key: METADATA_CREDENTIALS_SECRET, value: req.credentialsSecret });
  return {
    project: opts.project,
    zone: req.zone,
    instanceResource: {
      name: req.name,
      description: `proxyplane proxy ${req.proxyName}`,
      machineType: `zones/${req.zone}/machineTypes/${req.machineType}`,
      labels: {
        [LABEL_MANAGED_BY]: MANAGED_BY,
        // GCE label values are lower case only: a uid a console edit put in capitals (which the plane
        // reads case-blind: instance-name.ts uidKey) was refused as invalid, a permanent failure, and the
        // proxy latched Failed after its old VM was deleted for a replacement.
        [LABEL_UID]: req.uid.toLowerCase(),
        [LABEL_NAME]: req.proxyName,
        [LABEL_SPEC_HASH]: req.specHash,
      },
      tags: { items: [NETWORK_TAG] },
      metadata: { items: metadata },
      disks: [{ boot: true, autoDelete: true, initializeParams: { sourceImage: req.image } }],
      networkInterfaces: [
        {
          network: opts.network ?? 'global/networks/default',
          ...(opts.subnetwork ? { subnetwork: opts.subnetwork } : {}),
          // An external address: crawlers reach the proxy on its natIP (status.ip).
          accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }],
        },
      ],
      ...(opts.serviceAccountEmail
        ? { serviceAccounts: [{ email: opts.serviceAccountEmail, scopes: [CLOUD_PLATFORM] }] }
        : {}),
    },
  };
}
