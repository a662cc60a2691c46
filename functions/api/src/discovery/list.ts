// What discovery adds to the admin API's GET /v1/proxies so that one route serves admins and crawlers
// (seed §7: `?attr.k=v&healthy=true` → {proxies, count}, each proxy with its active lease count):
// the `healthy` filter (the one rule in domain/leases/health.ts, plus a reachable address) and
// `activeLeases` from the lease store's view.
import { isLeasable } from '../../../../shared/src/domain/leases/selection.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { LeaseStore } from '../../../../shared/src/ports/lease-store.js';

export type ListedProxy = ProxyResource & { healthy: boolean; activeLeases: number };

export interface DiscoveryView {
  list(proxies: readonly ProxyResource[], healthy: boolean | undefined): Promise<ListedProxy[]>;
}

export function discoveryView(deps: {
  store: Pick<LeaseStore, 'usage' | 'refresh'>;
  clock: Clock;
  /** Resolves once the lease views have loaded. */
  ready: () => Promise<void>;
}): DiscoveryView {
  return {
    async list(proxies, healthy) {
      await deps.ready();
      await deps.store.refresh(proxies.map((p) => p.name));
      const now = deps.clock.now();
      return proxies
        .map((p) => ({ ...p, healthy: isLeasable(p), activeLeases: deps.store.usage(p.name, now).active }))
        .filter((p) => healthy === undefined || p.healthy === healthy);
    },
  };
}

/** Without the lease API wired: the healthy filter and flag still work; there are no lease counts. */
export const healthOnlyView: DiscoveryView = {
  async list(proxies, healthy) {
    return proxies
      .map((p) => ({ ...p, healthy: isLeasable(p), activeLeases: 0 }))
      .filter((p) => healthy === undefined || p.healthy === healthy);
  },
};
