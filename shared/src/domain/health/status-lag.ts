// Whether a proxy's status still lags the probe's stored verdict (operator seed §6: "on drop the reported
// markers do NOT advance → next probe retries"). The probe stores its state before it publishes, so a lost
// publish (a Pub/Sub error, the function killed in between) leaves nothing for the next tick's decision to
// publish: the state no longer changes. For an external proxy nothing else ever reconciles it (no drift
// poll, reconcileExternal never requeues), so a dead endpoint would stay Ready — listed by discovery,
// leased, in the gateways' snapshots — until it recovered. Comparing the stored verdict with the Healthy
// condition the probe already read costs no read and no write, and converges once reconcile folds it.
// A latency report is such a marker too: its publish lost, the state holds the new latency (so the next
// decision sees no change) while status keeps the old one — for an external proxy until the next report,
// which a steady latency never makes — and lease selection ranks on status.latencyMillis.
import { ConditionType, type ProxyResource } from '../proxy.js';
import { healthInstanceKey } from './instance-key.js';
import { healthVerdictOf, type ProxyHealthState } from './proxy-health.js';
import { sameRoutes } from './target-tracks.js';

/**
 * True when reconcile, given this state, would stage a Healthy condition (value or reason), a latency, or
 * unreachable routes, other than the ones in status.
 * False whenever reconcile would not fold the verdict at all — a proxy going away, a managed proxy without
 * a running instance (key ''), a state about another instance (conditions.ts verdictFor), no verdict yet —
 * so a republish is never a request reconcile answers with nothing, repeated every pass.
 */
export function statusLags(
  state: ProxyHealthState,
  proxy: Pick<ProxyResource, 'uid' | 'spec' | 'status' | 'deletionRequestedAt'>,
): boolean {
  if (proxy.deletionRequestedAt) return false;
  const key = healthInstanceKey(proxy);
  if (key === '' || state.instance !== key) return false;
  const verdict = healthVerdictOf(state);
  if (verdict === null) return false;
  const shown = proxy.status.conditions.find((c) => c.type === ConditionType.Healthy);
  if (!shown || shown.status === 'Unknown') return true;
  // The reason too: SUSPECT keeps Healthy=True but shows as ProbeSuspect/PassiveSuspect.
  if ((shown.status === 'True') !== verdict.healthy || shown.reason !== verdict.reason) return true;
  // The latency (applyHealth copies it as is): a lost latency report must not leave status.latencyMillis,
  // which lease selection ranks on, behind the probe's for good.
  if ((proxy.status.latencyMillis ?? null) !== verdict.latencyMillis) return true;
  // And the routes the snapshots leave it out of (TARGET tier): a lost publish must not keep a blocked
  // proxy in its route, or a recovered one out of it.
  return !sameRoutes(proxy.status.unreachableRoutes ?? [], verdict.unreachableRoutes);
}
