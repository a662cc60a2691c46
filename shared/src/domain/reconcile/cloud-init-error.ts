// A managed proxy whose cloud-init cannot be resolved (the seed's resolveCloudInit error arm). A spec that
// can never produce one is latched; a transient failure is retried by redelivery; a secret or version that
// cannot be read (missing, disabled, destroyed) is CloudInitError with backoff — nothing new is built on a
// version no one can read. What happens to a Running instance meanwhile depends on what it serves:
// - a credentials version that can still be read (the newest was disabled mid-rotation, say): it keeps
//   serving, leasable, handed out as status.servedCredentials, with the error in its Provisioned
//   condition — one bad version is not an outage of every proxy on the secret;
// - a revoked version (disabled or destroyed too), whatever its cloud-init: it is deleted — the operator
//   revoked what it accepts, and there is nothing readable to rebuild it with until a new version comes;
// - anything else (a cloud-init of the operator's own on a readable version, an instance that does not
//   say): kept as it is, out of leasing;
// - not known (the instance could not be observed, a transient error): retried by redelivery, nothing written.
import { ConditionType, ProvisionedReason, type ProxyResource, type ProxyStatus } from '../proxy.js';
import { servedRefOf } from '../served-credentials.js';
import { clearInstance, findCondition, setProvisioned, withoutInstanceSeenDown } from './conditions.js';
import { type Managed, provesHealthy, servesReadableCredentials, serving } from './serving-status.js';
import type { CloudInitObservation, Observation, Plan, PollIntervals } from './types.js';

type CloudInitFailure = Extract<CloudInitObservation, { ok: false }>['failure'];

export function cloudInitUnresolved(
  proxy: Managed,
  obs: Observation,
  iv: PollIntervals,
  failure: CloudInitFailure,
): Plan {
  const { now } = obs;
  const gen = proxy.generation;
  const status = proxy.status;
  if (failure.kind === 'spec') {
    return {
      branch: 'cloud-init/spec',
      status: setProvisioned(status, false, ProvisionedReason.PermanentError, failure.message, gen, now),
      action: null,
      requeue: { kind: 'none' },
    };
  }
  if (failure.kind === 'transient') {
    return {
      branch: 'cloud-init/transient',
      status,
      action: null,
      requeue: { kind: 'error', failure: { kind: 'transient', message: failure.message } },
    };
  }
  const seen = obs.instance;
  // What the instance serves decides what the proxy shows (below): a GCE blip hiding it is no reason to
  // take a serving proxy out of leasing (Provisioned=False) and restart its health on a new incarnation
  // key — for up to CloudInitRetryMax, the backoff of an error that began long ago. Redelivered, as the
  // same blip is outside CloudInitError (failure.ts).
  if (seen?.kind === 'error' && seen.failure.kind === 'transient') {
    return {
      branch: 'cloud-init/error-observe/transient',
      status,
      action: null,
      requeue: { kind: 'error', failure: seen.failure },
    };
  }
  const inst = seen?.kind === 'found' && seen.instance.state === 'Running' ? seen.instance : null;
  if (inst && servesReadableCredentials(proxy, obs, inst)) {
    const message = `${failure.message}; the instance keeps serving the credentials version it booted with`;
    const next = serving(proxy, obs, inst, ProvisionedReason.CloudInitError, message);
    return {
      branch: 'cloud-init/error-serving',
      status: next,
      action: null,
      // It serves meanwhile; a new version (or the old one enabled again) notifies, and that pass comes at once.
      requeue: { kind: 'after', ms: iv.CloudInitRetryMax },
      // A replacement's new instance (on a version still readable) proving healthy here ends the replacement
      // as in the running arm: the running arm, once the version is readable again, would not see it first.
      ...(provesHealthy(status, next) ? { slot: 'release' as const } : {}),
    };
  }
  if (inst && obs.servedCredentials === 'revoked' && servedRefOf(inst.serves?.credentialsSecret)) {
    const message = `${failure.message}; the version its instance serves is revoked too: deleting the instance`;
    return {
      branch: 'cloud-init/error-revoked',
      status: cloudInitFailing(clearInstance(status, { keepProviderId: true }), message, gen, now),
      action: { kind: 'delete', providerId: inst.providerId },
      requeue: { kind: 'after', ms: iv.DeletionPoll },
    };
  }
  // Not Running — booting again, stopped, started again later — or gone: what the probe said of it before
  // says nothing of the VM that boots, which the error-serving arm above would hand out once Running (as
  // the provisioning arm, managed.ts), and its address goes: GCE releases a stopped or deleted VM's
  // ephemeral address, and another project's VM may get it (the probe dials status.ip with the proxy's
  // credentials). This arm's passes are minutes apart: a boot between two is not seen.
  const base = withoutInstanceSeenDown(status, seen) ?? status;
  return {
    branch: 'cloud-init/error',
    status: cloudInitFailing(base, failure.message, gen, now),
    action: null,
    requeue: { kind: 'after', ms: cloudInitBackoff(proxy, now, iv) },
  };
}

/** Backoff while the cloud-init cannot be resolved: as long again as it has been failing, within bounds. */
function cloudInitBackoff(proxy: ProxyResource, now: Date, iv: PollIntervals): number {
  const c = findCondition(proxy.status, ConditionType.Provisioned);
  const failingFor =
    c?.reason === ProvisionedReason.CloudInitError ? now.getTime() - c.lastTransitionTime.getTime() : 0;
  return Math.min(iv.CloudInitRetryMax, Math.max(iv.CloudInitRetryMin, failingFor));
}

/**
 * Provisioned=False with reason CloudInitError. The condition's lastTransitionTime moves only on a flip of
 * its status, but the backoff above counts from when the error began: entering CloudInitError from
 * another False reason (Provisioning, Replacing, a quota error) restamps it, so an hour spent provisioning
 * does not read as an hour of failing cloud-init and jump the retry to its ceiling.
 */
function cloudInitFailing(status: ProxyStatus, message: string, gen: number, now: Date): ProxyStatus {
  const next = setProvisioned(status, false, ProvisionedReason.CloudInitError, message, gen, now);
  if (findCondition(status, ConditionType.Provisioned)?.reason === ProvisionedReason.CloudInitError)
    return next;
  return {
    ...next,
    conditions: next.conditions.map((c) =>
      c.type === ConditionType.Provisioned ? { ...c, lastTransitionTime: now } : c,
    ),
  };
}
