// One emulated instance: the caller's spec plus what GCE adds (id, status, addresses, timestamps),
// and its rendering as the Instance resource GCE returns. natIP is only present while RUNNING, the
// way an ephemeral external address is; networkIP is assigned at creation and kept across stop/start.
import { createHash } from 'node:crypto';
import type { ForwardProxy } from '../forward-proxy/proxy.js';
import type { InstanceSpec } from './instance-spec.js';
import { instancePath, link, zonePath } from './links.js';
import type { OperationRecord } from './operations.js';
import { regionOf } from './zones.js';

export type InstanceStatus = 'PROVISIONING' | 'STAGING' | 'RUNNING' | 'STOPPING' | 'TERMINATED';

export interface InstanceRecord {
  project: string;
  zone: string;
  spec: InstanceSpec;
  id: string;
  createdAt: Date;
  status: InstanceStatus;
  statusMessage?: string;
  /** loopback address standing in for both the internal and the external IP */
  address: string;
  proxy: ForwardProxy | null;
  /** why the VM's proxy is not serving, when it is not (bad port, secret not resolved…) */
  proxyError?: string;
  lastStartTimestamp?: Date;
  lastStopTimestamp?: Date;
  /** a delete is in progress: the record goes away when it completes */
  deleting: boolean;
  /** bumped by every transition, so timers of an overtaken one do nothing */
  epoch: number;
  /** operations that complete when the current transition does */
  pending: OperationRecord[];
  fingerprints: { labels: string; tags: string; metadata: string; instance: string };
}

const fingerprint = (value: unknown) =>
  createHash('sha256').update(JSON.stringify(value)).digest().subarray(0, 8).toString('base64');

export function fingerprintsOf(spec: InstanceSpec): InstanceRecord['fingerprints'] {
  return {
    labels: fingerprint(spec.labels),
    tags: fingerprint(spec.tags),
    metadata: fingerprint(spec.metadata),
    instance: fingerprint(spec),
  };
}

export const instanceKey = (project: string, zone: string, name: string) => `${project}/${zone}/${name}`;

export function toInstanceResource(r: InstanceRecord): Record<string, unknown> {
  const { spec } = r;
  const region = regionOf(r.zone);
  const running = r.status === 'RUNNING';
  const resource: Record<string, unknown> = {
    kind: 'compute#instance',
    id: r.id,
    creationTimestamp: r.createdAt.toISOString(),
    name: spec.name,
    description: spec.description,
    tags: { items: spec.tags, fingerprint: r.fingerprints.tags },
    machineType: spec.machineType,
    status: r.status,
    zone: link(zonePath(r.project, r.zone)),
    canIpForward: false,
    networkInterfaces: spec.networkInterfaces.map((nic, i) => ({
      kind: 'compute#networkInterface',
      network: nic.network,
      subnetwork: nic.subnetwork ?? link(`projects/${r.project}/regions/${region}/subnetworks/default`),
      networkIP: r.address,
      name: `nic${i}`,
      accessConfigs: nic.accessConfigs.map((ac) => ({
        kind: 'compute#accessConfig',
        type: ac.type,
        name: ac.name,
        networkTier: ac.networkTier,
        ...(running && i === 0 ? { natIP: r.address } : {}),
      })),
      fingerprint: r.fingerprints.instance,
      stackType: 'IPV4_ONLY',
    })),
    disks: spec.disks.map((d, index) => ({
      kind: 'compute#attachedDisk',
      type: 'PERSISTENT',
      mode: 'READ_WRITE',
      source: d.source,
      deviceName: d.deviceName,
      index,
      boot: d.boot,
      autoDelete: d.autoDelete,
      interface: 'SCSI',
      diskSizeGb: d.diskSizeGb,
      architecture: 'X86_64',
    })),
    metadata: { kind: 'compute#metadata', fingerprint: r.fingerprints.metadata, items: spec.metadata },
    serviceAccounts: spec.serviceAccounts,
    selfLink: link(instancePath(r.project, r.zone, spec.name)),
    scheduling: spec.scheduling,
    cpuPlatform: running ? 'Intel Broadwell' : 'Unknown CPU Platform',
    labels: spec.labels,
    labelFingerprint: r.fingerprints.labels,
    startRestricted: false,
    deletionProtection: spec.deletionProtection,
    fingerprint: r.fingerprints.instance,
  };
  if (r.statusMessage) resource.statusMessage = r.statusMessage;
  if (r.lastStartTimestamp) resource.lastStartTimestamp = r.lastStartTimestamp.toISOString();
  if (r.lastStopTimestamp) resource.lastStopTimestamp = r.lastStopTimestamp.toISOString();
  return resource;
}

/** Top-level fields a list filter may name (GCE rejects a filter on a field the resource lacks). */
export const INSTANCE_FIELDS: ReadonlySet<string> = new Set([
  'kind',
  'id',
  'creationTimestamp',
  'name',
  'description',
  'tags',
  'machineType',
  'status',
  'statusMessage',
  'zone',
  'canIpForward',
  'networkInterfaces',
  'disks',
  'metadata',
  'serviceAccounts',
  'selfLink',
  'scheduling',
  'cpuPlatform',
  'labels',
  'labelFingerprint',
  'startRestricted',
  'deletionProtection',
  'fingerprint',
  'lastStartTimestamp',
  'lastStopTimestamp',
]);
