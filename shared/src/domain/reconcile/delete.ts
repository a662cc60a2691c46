// The seed's reconcileDelete (§4). The finalizer becomes an ordering: the document is deleted only once
// the instance is gone, so a proxy being deleted stays visible (phase Deleting) and still counts as live
// for the GC until then.
import { ProvisionedReason, type ProxyResource } from '../proxy.js';
import { clearInstance, setProvisioned } from './conditions.js';
import { providerFailure } from './failure.js';
import type { Observation, Plan, PollIntervals } from './types.js';

export function reconcileDelete(proxy: ProxyResource, obs: Observation, iv: PollIntervals): Plan {
  const { now } = obs;
  const status = proxy.status;
  const removeDocument = (branch: string): Plan => ({
    branch,
    status,
    action: { kind: 'deleteDocument' },
    requeue: { kind: 'none' },
    // A proxy deleted mid-replacement frees its replacement slot.
    slot: 'release',
  });

  if (!status.providerId) return removeDocument('delete/no-instance');
  if (!obs.providerRegistered) {
    // The instance cannot be deleted without its provider; keep the document so nothing leaks silently.
    const message = 'provider is not registered: cannot delete the instance';
    return {
      branch: 'delete/provider-missing',
      status: setProvisioned(status, false, ProvisionedReason.PermanentError, message, proxy.generation, now),
      action: null,
      requeue: { kind: 'none' },
    };
  }
  const seen = obs.instance;
  if (!seen) throw new Error('reconcileDelete needs the instance observation');
  if (seen.kind === 'error') return providerFailure(proxy, status, seen.failure, now, iv, 'delete/observe');
  if (seen.kind === 'missing') return removeDocument('delete/gone');
  return {
    branch: 'delete/instance',
    status: setProvisioned(
      clearInstance(status, { keepProviderId: true }),
      false,
      ProvisionedReason.Deleting,
      'deleting the instance',
      proxy.generation,
      now,
    ),
    action: { kind: 'delete', providerId: seen.instance.providerId },
    requeue: { kind: 'after', ms: iv.DeletionPoll },
  };
}
