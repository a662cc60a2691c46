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

/**
 * A gateway claim closes the race between a lease grant and the planner handing the same unowned pool
 * proxy to a worker, which read each other's state at different times. The planner writes
 * `leaseState/{proxy}.gatewayClaim = {epoch}` in the commit that assigns the proxy, preconditioned on the
 * lease state it read (so a grant that landed first fails the assignment); a grant commits on the same
 * document under its own precondition (so it re-reads and finds the claim when the assignment landed
 * first). A claim holds the proxy until the lease service's ownership view has caught up with it: the view
 * has seen epoch `claimEpoch` or later (the epoch moves with the last commit of the changes made at it,
 * and a listener's snapshot is consistent) and shows no owner — then the proxy was released since, and the
 * ordinary gate (`leasableBesideGateway`) decides. That holds even of a view that has stopped following (a
 * listener re-subscribing): an assignment after the view's epoch writes a newer claim, which the grant either
 * reads or fails its precondition on. The grant that finds a claim settled removes it in its own write.
 */
export function gatewayClaimSettled(
  claimEpoch: number,
  view: { epoch: number | null; owned: boolean },
): boolean {
  return view.epoch !== null && view.epoch >= claimEpoch && !view.owned;
}
