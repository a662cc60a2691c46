// The meeting point of leases and gateway ownership (contract §1 + §4 step 4): only a proxy without an
// owner may be extracted. A gateway-pool proxy is the gateway's unless it is reclaimed; either way it is
// leasable only once no worker owns it any more (the drain finished and the ownership was cleared).
import type { ProxyResource } from '../proxy.js';

// `current` is false while the ownership/reclaim views may trail (a listener is re-subscribing): a pool
// proxy then fails closed, since its owner and reclaim are exactly what moves; a proxy outside the pool
// keeps its last known answer, because the planner never assigns one (it cannot gain an owner meanwhile).
export function leasableBesideGateway(
  proxy: ProxyResource,
  owned: boolean,
  reclaimed: boolean,
  current = true,
): boolean {
  if (owned) return false;
  if (!proxy.spec.gatewayPool) return true;
  return reclaimed && current;
}
