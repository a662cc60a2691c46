// Which routes keep their unreachable proxies after all (contract §6 TARGET tier, docs/health.md § TARGET):
// those whose target check fails through EVERY proxy they select that some snapshot carries this pass. That says more about the
// target (down, or the check misconfigured) than about the proxies, and excluding them all would turn one
// check into an outage of the route. Decided here, over the whole pool, because no single worker can:
// each owns only its share, so a worker that owns only excluded proxies is not a route that failed —
// other workers carry it — and failing open there would send its share through proxies the site refuses.
import { selects } from '../gateway/routing.js';
import { proxyEndpoint } from '../leases/endpoint.js';
import { isHealthy } from '../leases/health.js';
import { isCordoned, type ProxyResource } from '../proxy.js';

/**
 * Routes (by name) that every snapshot-eligible proxy of `carried` they select is unreachable for; sorted.
 * `carried`: the proxies the workers' snapshots hold this pass (owned, not draining) — a reachable proxy
 * no snapshot holds carries nothing for the route.
 */
export function failOpenRoutes(
  routing: readonly { name: string; selector?: Readonly<Record<string, string>> }[],
  carried: readonly ProxyResource[],
): string[] {
  // Only a proxy a snapshot could carry (healthy, with an address, not cordoned) counts: a dead or cordoned
  // proxy is not evidence that the route has somewhere else to go.
  const eligible = carried.filter(
    (p) => !p.deletionRequestedAt && isHealthy(p) && proxyEndpoint(p) !== null && !isCordoned(p),
  );
  const failed: string[] = [];
  for (const r of routing) {
    const selected = eligible.filter((p) => selects(r.selector ?? {}, p.spec.attributes));
    if (selected.length > 0 && selected.every((p) => p.status.unreachableRoutes?.includes(r.name))) {
      failed.push(r.name);
    }
  }
  return failed.sort();
}
