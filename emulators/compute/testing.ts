// Helpers for tests that drive the emulator with the real @google-cloud/compute clients.
import type { protos } from '@google-cloud/compute';
// The clients' own modules, as shared/src/adapters/gce/clients.ts takes them (the index costs ~2.4 s of CPU).
import { InstancesClient } from '@google-cloud/compute/build/src/v1/instances_client.js';
import { ZoneOperationsClient } from '@google-cloud/compute/build/src/v1/zone_operations_client.js';
import { pruneInstalledComputeProtos } from '../../shared/src/adapters/gce/compute-protos.js';
import { localClientOptions } from '../../shared/src/adapters/local-endpoints.js';
import { renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import {
  DEFAULT_PROXY_PORT,
  METADATA_CREDENTIALS_SECRET,
  METADATA_PROXY_PORT,
  METADATA_STARTUP_SCRIPT,
} from './instance-spec.js';

type ComputeClientOptions = ConstructorParameters<typeof InstancesClient>[0];

export function computeClients(endpoint: string) {
  // google-auth-library 10.9 (ours) and 10.5 (google-gax's own copy) differ only in types: the
  // PassThroughClient works at run time but is not assignable, hence the cast.
  const options = localClientOptions(endpoint) as unknown as ComputeClientOptions;
  pruneInstalledComputeProtos();
  const instances = new InstancesClient(options);
  const zoneOps = new ZoneOperationsClient(options);
  return {
    instances,
    zoneOps,
    close: async () => {
      await instances.close();
      await zoneOps.close();
    },
  };
}

export interface TestInstanceOptions {
  zone: string;
  labels?: Record<string, string>;
  tags?: string[];
  machineType?: string;
  proxyPort?: number;
  /** Secret Manager version resource holding "user:pass" */
  credentialsSecret?: string;
  extraMetadata?: Record<string, string>;
  /**
   * The ports its proxy lets CONNECT reach: the instance gets the default startup script rendered with
   * them, as reconcile renders it for a spec's `connectPorts`. Absent: no startup script, so 443 only.
   */
  connectPorts?: number[];
}

/** A valid instances.insert body shaped like the gce provider's (external NAT, proxy metadata). */
export function instanceBody(name: string, o: TestInstanceOptions) {
  const metadata: Array<{ key: string; value: string }> = [];
  if (o.proxyPort !== undefined) metadata.push({ key: METADATA_PROXY_PORT, value: String(o.proxyPort) });
  if (o.credentialsSecret) metadata.push({ key: METADATA_CREDENTIALS_SECRET, value: o.credentialsSecret });
  if (o.connectPorts) {
    const script = renderDefaultCloudInit({
      port: o.proxyPort ?? DEFAULT_PROXY_PORT,
      credentialsSecret: o.credentialsSecret ?? 'projects/test/secrets/proxy-credentials',
      connectPorts: o.connectPorts,
    });
    metadata.push({ key: METADATA_STARTUP_SCRIPT, value: script });
  }
  for (const [key, value] of Object.entries(o.extraMetadata ?? {})) metadata.push({ key, value });
  return {
    name,
    machineType: `zones/${o.zone}/machineTypes/${o.machineType ?? 'e2-small'}`,
    labels: o.labels ?? {},
    tags: { items: o.tags ?? ['proxyplane-proxy'] },
    metadata: { items: metadata },
    disks: [
      {
        boot: true,
        autoDelete: true,
        initializeParams: { sourceImage: 'projects/debian-cloud/global/images/family/debian-12' },
      },
    ],
    networkInterfaces: [
      {
        network: 'global/networks/default',
        accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }],
      },
    ],
  };
}

/** The GCE error body a GaxiosError carries in its message (recipes §3). */
export function gceErrorOf(err: unknown): {
  httpStatus: number;
  reason?: string;
  domain?: string;
  message: string;
} {
  const e = err as { code?: unknown; message?: string };
  const body = JSON.parse(e.message ?? '{}') as {
    error?: { code: number; message: string; errors?: Array<{ reason: string; domain: string }> };
  };
  return {
    httpStatus: typeof e.code === 'number' ? e.code : (body.error?.code ?? 0),
    reason: body.error?.errors?.[0]?.reason,
    domain: body.error?.errors?.[0]?.domain,
    message: body.error?.message ?? String(e.message),
  };
}

/** Waits on a zone operation until DONE (wait returns early after its own deadline). */
export async function waitForOperation(
  zoneOps: ZoneOperationsClient,
  project: string,
  zone: string,
  operation: string,
  attempts = 10,
) {
  for (let i = 0; i < attempts; i++) {
    const [op] = await zoneOps.wait({ project, zone, operation });
    if (op.status === 'DONE') return op;
  }
  throw new Error(`operation ${operation} not DONE after ${attempts} waits`);
}

export type ComputeOperation = protos.google.cloud.compute.v1.IOperation;

/** insert/delete/stop/start resolve to an LRO wrapper whose latestResponse is the compute Operation. */
export const operationOf = (lro: { latestResponse: unknown }) => lro.latestResponse as ComputeOperation;
