// The meeting point of leases and gateway ownership (contract §1 + §4 step 4): only a proxy without an
// owner may be extracted. A gateway-pool proxy is the gateway's unless it is reclaimed; either way it is
// leasable only once no worker owns it any more (the drain finished and the ownership was cleared).
import type { ProxyResource } from '../proxy.js';

export function leasableBesideGateway(proxy: ProxyResource, owned: boolean, reclaimed: boolean): boolean {
  if (owned) return false;
  return !proxy.spec.gatewayPool || reclaimed;
}
