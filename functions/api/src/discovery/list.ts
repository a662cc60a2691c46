// What discovery adds to the admin API's GET /v1/proxies so that one route serves admins and crawlers
// (seed §7: `?attr.k=v&healthy=true` → {proxies, count}, each proxy with its active lease count):
// the `healthy` filter and flag (the one rule in domain/leases/health.ts, plus a reachable address) and
// `activeLeases` from the lease store, re-read where this replica's view is old.
import { isLeasable } from '../../../../shared/src/domain/leases/selection.js';
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import { type LeaseStore, LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import { ApiError } from '../errors.js';
import type { LeaseMetrics } from '../leases/metrics.js';

export type ListedProxy = ProxyResource & { healthy: boolean; activeLeases: number };

export interface DiscoveryView {
  list(proxies: readonly ProxyResource[], healthy: boolean | undefined): Promise<ListedProxy[]>;
}

export function discoveryView(deps: {
  store: Pick<LeaseStore, 'usage' | 'refresh'>;
  clock: Clock;
  /** Resolves once the lease views have loaded. */
  ready: () => Promise<void>;
  metrics: LeaseMetrics;
}): DiscoveryView {
  return {
    async list(proxies, healthy) {
      try {
        await deps.ready();
        await deps.store.refresh(proxies.map((p) => p.name));
      } catch (err) {
        if (!(err instanceof LeaseStoreError)) throw err;
        deps.metrics.leaseRequest('list', 'unavailable');
        throw new ApiError(
          503,
          'unavailable',
          'lease counts are unavailable; retry',
          { retryAfterSeconds: 2 },
          {
            cause: err,
          },
        );
      }
      const now = deps.clock.now();
      deps.metrics.leaseRequest('list', 'ok');
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
