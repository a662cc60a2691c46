// The one rule for "healthy" that discovery (`healthy=true`) and lease selection share. The health
// engine (seed §6) will own the Healthy condition; until it sets one, the lifecycle phase decides.
import type { ProxyResource } from '../proxy.js';

export const HEALTHY_CONDITION = 'Healthy';

export function isHealthy(proxy: ProxyResource): boolean {
  if (proxy.deletionRequestedAt !== null) return false;
  const { phase, conditions } = proxy.status;
  if (phase === 'Deleting' || phase === 'Failed') return false;
  const healthy = conditions.find((c) => c.type === HEALTHY_CONDITION);
  if (healthy) return healthy.status === 'True';
  // No verdict yet: Ready means the health check passed; a Provisioned proxy with no health check
  // configured will never be probed, so it is as healthy as it will ever be declared.
  return phase === 'Ready' || (phase === 'Provisioned' && proxy.spec.healthCheck.url === undefined);
}
