// The one rule for "healthy" that discovery (`healthy=true`) and lease selection share: the health
// engine's verdict (seed §6). The probe checks every proxy (its health-check URL, or a CONNECT handshake
// without one) and reconcile records the verdict as the Healthy condition; computePhase makes a proxy
// Ready only when it is Provisioned and Healthy. Requiring both means neither a stale Ready from before
// the first probe nor a Healthy verdict on an instance being replaced is handed to a crawler. Nor is an
// external proxy whose endpoint host was edited since reconcile last wrote its status (status.ip is its
// copy of the host): that status is still the old host's Ready, and the new host would be handed out on
// the old one's verdict until the edit's pass runs — a second, normally; a minute when the edit's
// publish failed and the requeue sweep brings the pass.
import { SUSPECT_REASONS } from '../health/verdict-reason.js';
import { ConditionType, type ProxyResource } from '../proxy.js';

export function isHealthy(proxy: ProxyResource): boolean {
  if (proxy.deletionRequestedAt !== null || proxy.status.phase !== 'Ready') return false;
  if (proxy.spec.mode === 'external' && proxy.status.ip !== proxy.spec.endpoint.host) return false;
  const healthy = proxy.status.conditions.find((c) => c.type === ConditionType.Healthy);
  return healthy?.status === 'True';
}

/** Healthy, but the health engine's verdict is SUSPECT (an AVAILABLE proxy that has started failing, or
 *  that the gateways report failures for): still usable, ranked below AVAILABLE (health/reducer.ts). */
export function isSuspect(proxy: ProxyResource): boolean {
  const healthy = proxy.status.conditions.find((c) => c.type === ConditionType.Healthy);
  return healthy?.status === 'True' && SUSPECT_REASONS.has(healthy.reason);
}
