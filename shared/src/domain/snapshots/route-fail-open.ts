// Which routes keep their unreachable proxies after all (contract §6 TARGET tier, docs/health.md § TARGET):
// those whose target check fails through EVERY proxy of the pool they select. That says more about the
// target (down, or the check misconfigured) than about the proxies, and excluding them all would turn one
// check into an outage of the route. Decided here, over the whole pool, because no single worker can:
// each owns only its share, so a worker that owns only excluded proxies is not a route that failed —
// other workers carry it — and failing open there would send its share through proxies the site refuses.
import { selects } from '../gateway/routing.js';
import { proxyEndpoint } from '../leases/endpoint.js';
import { isHealthy } from '../leases/health.js';
import type { ProxyResource } from '../proxy.js';

/** Routes (by name) every snapshot-eligible pool proxy they select is unreachable for; sorted. */
export function failOpenRoutes(
  routing: readonly { name: string; selector?: Readonly<Record<string, string>> }[],
  pool: readonly ProxyResource[],
): string[] {
  // Only a proxy a snapshot could carry (healthy, with an address) counts: a dead proxy is not evidence
  // that the route has somewhere else to go.
  const eligible = pool.filter((p) => !p.deletionRequestedAt && isHealthy(p) && proxyEndpoint(p) !== null);
  const failed: string[] = [];
  for (const r of routing) {
    const selected = eligible.filter((p) => selects(r.selector ?? {}, p.spec.attributes));
    if (selected.length > 0 && selected.every((p) => p.status.unreachableRoutes?.includes(r.name))) {
      failed.push(r.name);
    }
  }
  return failed.sort();
}
