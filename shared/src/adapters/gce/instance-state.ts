// GCE Instance → the provider-neutral ObservedInstance (seed §5: instances.Get → status/NatIP →
// InstanceState). https://cloud.google.com/compute/docs/instances/instance-life-cycle
import type { protos } from '@google-cloud/compute';
import type { InstanceState, ObservedInstance } from '../../domain/reconcile/types.js';
import {
  LABEL_NAME,
  LABEL_SPEC_HASH,
  LABEL_UID,
  METADATA_CREDENTIALS_SECRET,
  METADATA_PROXY_PORT,
} from './labels.js';
import { providerIdOf, zoneOfScope } from './provider-id.js';

type Instance = protos.google.cloud.compute.v1.IInstance;

const natIpOf = (inst: Instance): string | null =>
  inst.networkInterfaces?.[0]?.accessConfigs?.find((ac) => ac.natIP)?.natIP ?? null;

export function instanceState(status: string | null | undefined, natIp: string | null): InstanceState {
  switch (status) {
    case 'RUNNING':
      // RUNNING without an external address is still provisioning (seed §5).
      return natIp ? 'Running' : 'Provisioning';
    case 'STOPPING':
    case 'STOPPED':
    case 'SUSPENDING':
    case 'SUSPENDED':
    // Halted, its network, quota and disks being torn down on the way to TERMINATED or gone: no boot
    // is coming, so it must not read as one (Instance.Status in @google-cloud/compute 6's protos).
    case 'DEPROVISIONING':
      return 'Stopped';
    case 'TERMINATED':
      return 'Terminated';
    default:
      // PROVISIONING, STAGING, REPAIRING, PENDING (waiting for capacity), and anything newer GCE adds:
      // not serving yet, not dead.
      return 'Provisioning';
  }
}

export function observeInstance(inst: Instance, zone: string): ObservedInstance {
  const natIp = natIpOf(inst);
  const state = instanceState(inst.status, natIp);
  return {
    providerId: providerIdOf({ zone: inst.zone ? zoneOfScope(inst.zone) : zone, name: inst.name ?? '' }),
    state,
    ip: state === 'Running' ? natIp : null,
    specHash: inst.labels?.[LABEL_SPEC_HASH] ?? null,
    serves: servesOf(inst),
    createdAt: inst.creationTimestamp ? new Date(inst.creationTimestamp) : null,
  };
}

/** The port and credentials version the VM's startup read (metadata set by buildInsertRequest). */
function servesOf(inst: Instance): ObservedInstance['serves'] {
  const item = (key: string) => inst.metadata?.items?.find((i) => i.key === key)?.value ?? null;
  const port = Number(item(METADATA_PROXY_PORT));
  return {
    port: Number.isInteger(port) && port > 0 ? port : null,
    credentialsSecret: item(METADATA_CREDENTIALS_SECRET),
  };
}

export const ownershipOf = (inst: Instance) => ({
  uid: inst.labels?.[LABEL_UID] ?? null,
  proxyName: inst.labels?.[LABEL_NAME] ?? null,
  createdAt: inst.creationTimestamp ? new Date(inst.creationTimestamp) : null,
});
