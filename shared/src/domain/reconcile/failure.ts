// The seed's providerFailure(p, err) (§3, bottom): the error class decides the outcome.
//   quota     → Provisioned=False/QuotaExceeded, RequeueAfter QuotaRetry, no error
//   permanent → Provisioned=False/PermanentError at this generation → phase Failed, latched, no retry
//   transient → returned as an error: the handler throws and Pub/Sub redelivers with backoff
import { healthInstanceKey } from '../health/instance-key.js';
import { ConditionType, ProvisionedReason, type ProxyResource, type ProxyStatus } from '../proxy.js';
import {
  applyHealth,
  findCondition,
  setProvisioned,
  verdictFor,
  withoutInstanceSeenDown,
} from './conditions.js';
import { deleteNotReady } from './delete-not-ready.js';
import { statusChanged } from './patch-status.js';
import type { ActionResult, Failure, Observation, Plan, PollIntervals } from './types.js';

export function providerFailure(
  proxy: ProxyResource,
  base: ProxyStatus,
  failure: Failure,
  now: Date,
  intervals: PollIntervals,
  branch: string,
): Plan {
  switch (failure.kind) {
    case 'quota':
      return {
        branch: `${branch}/quota`,
        status: setProvisioned(
          base,
          false,
          ProvisionedReason.QuotaExceeded,
          failure.message,
          proxy.generation,
          now,
        ),
        action: null,
        requeue: { kind: 'after', ms: intervals.QuotaRetry },
      };
    case 'permanent':
      return {
        branch: `${branch}/permanent`,
        status: setProvisioned(
          base,
          false,
          ProvisionedReason.PermanentError,
          failure.message,
          proxy.generation,
          now,
        ),
        action: null,
        requeue: { kind: 'none' },
      };
    case 'transient':
      return {
        branch: `${branch}/transient`,
        status: proxy.status,
        action: null,
        requeue: { kind: 'error', failure },
      };
  }
}

/**
 * What a pass that fails in passing writes anyway (such a pass otherwise writes nothing: Pub/Sub
 * redelivers it) when it saw the instance stopped, booting or gone while status still shows its address,
 * or running at another one (restarted between passes, conditions.ts addressMoved):
 * GCE releases a stopped or deleted VM's ephemeral address, another project's VM may get it, and the
 * probe would dial it with the proxy's credentials through the whole redelivery chain — a Compute outage
 * failing the delete, or Secret Manager failing the fresh cloud-init read a delete waits for. The address
 * and verdict go, Provisioned turns False and says the pass is failing. null: nothing of the kind.
 */
export function addressGone(
  proxy: ProxyResource,
  obs: Pick<Observation, 'now'> & Partial<Pick<Observation, 'instance'>>,
  failure: Failure,
): ProxyStatus | null {
  const seen = obs.instance;
  const cleared = proxy.status.ip ? withoutInstanceSeenDown(proxy.status, seen) : null;
  if (!cleared || !seen || seen.kind === 'error') return null;
  const inst = seen.kind === 'found' ? seen.instance : null;
  // Stopped or terminated: deleted and replaced (the stopped arm); booting, restarted or gone: provisioning.
  const reason = proxy.deletionRequestedAt
    ? ProvisionedReason.Deleting
    : inst?.state === 'Stopped' || inst?.state === 'Terminated'
      ? ProvisionedReason.Replacing
      : ProvisionedReason.Provisioning;
  const what = !inst
    ? 'instance not found'
    : inst.state === 'Running'
      ? `instance restarted at another address (${inst.ip})`
      : `instance ${inst.state.toLowerCase()}`;
  return setProvisioned(
    cleared,
    false,
    reason,
    `${what}; retrying after a passing failure: ${failure.message}`,
    proxy.generation,
    obs.now,
  );
}

/**
 * What else a pass that fails in passing writes anyway (after addressGone, which clears the verdict with
 * the address): the probe's verdict about the instance the status describes, when it changes the status.
 * A probe's transition is what takes a dead proxy out of discovery, leases and the gateways' snapshots,
 * and it reaches status only through a reconcile pass — which, during a Secret Manager outage (the
 * cloud-init read) or a Compute one (the instance read), fails before its status write on every
 * redelivery: the proxy stayed Healthy for as long as the outage lasted. Only a verdict about that very
 * instance (the key status names, instance-key.ts: Provisioned=True since when), so one about an instance
 * replaced since is never folded. Never one that makes the proxy Healthy: that waits for a pass that
 * succeeds, which also ends a replacement the proxy's new instance was (provesHealthy frees its slot; a
 * pass that throws frees nothing, and the next would find it Healthy already). null: nothing to fold.
 */
export function healthInPassing(
  proxy: ProxyResource,
  obs: Pick<Observation, 'now' | 'health'>,
): ProxyStatus | null {
  const verdict = verdictFor(obs.health, healthInstanceKey(proxy));
  if (!verdict) return null;
  if (verdict.healthy && findCondition(proxy.status, ConditionType.Healthy)?.status !== 'True') return null;
  const folded = applyHealth(proxy.status, verdict, proxy.generation, obs.now);
  return statusChanged(proxy.status, folded) ? folded : null;
}

/**
 * The second half of a pass that acted: a successful create stages the providerId it returned; a delete
 * refused while the instance is being created says so (delete-not-ready.ts); a failed action discards
 * what the arm staged (the action did not happen) and goes through providerFailure — except what the
 * pass saw: an instance observed stopped or booting keeps no address (withoutInstanceSeenDown).
 */
export function settle(
  proxy: ProxyResource,
  plan: Plan,
  result: ActionResult,
  obs: Pick<Observation, 'now'> & Partial<Pick<Observation, 'instance'>>,
  intervals: PollIntervals,
): Plan {
  if (result.ok) {
    if (plan.action?.kind === 'create' && result.providerId) {
      return { ...plan, status: { ...plan.status, providerId: result.providerId } };
    }
    if (plan.action?.kind === 'delete' && result.deleteOutcome === 'not-ready') {
      return deleteNotReady(
        proxy,
        plan,
        obs.now,
        obs.instance?.kind === 'found' ? obs.instance.instance : undefined,
      );
    }
    return plan;
  }
  const base = withoutInstanceSeenDown(proxy.status, obs.instance) ?? proxy.status;
  return providerFailure(proxy, base, result.failure, obs.now, intervals, plan.branch);
}
