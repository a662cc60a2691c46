// What discovery adds to the admin API's GET /v1/proxies so that one route serves admins and crawlers
// (seed §7: `?attr.k=v&healthy=true` → {proxies, count}, each proxy with its active lease count):
// the `healthy` filter and flag (the one rule in domain/leases/health.ts, plus a reachable address),
// `activeLeases` from the lease store, re-read where this replica's view is old, and `leasable`: healthy
// and not held by the gateway (contract §4 step 4: a gateway-pool proxy that is not reclaimed, or one a
// worker still owns, is listed — admins and the fleet page need it — but never leased; nor is a cordoned
// one, spec.cordoned, whatever its health: docs/leases.md § Cordon). `protocol=` keeps
// the proxies speaking it, by the rule lease selection applies, so a crawler can list what it could lease.

import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { isLeasable } from '../../../../shared/src/domain/leases/selection.js';
import type { ProxyProtocol, ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { isCordoned, proxyProtocol } from '../../../../shared/src/domain/proxy.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import { type LeaseStore, LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import { StoreError } from '../../../../shared/src/ports/proxy-store.js';
import type { OwnershipGate } from '../../../../shared/src/ports/workers-ownership.js';
import { ApiError } from '../errors.js';
import type { LeaseMetrics } from '../leases/metrics.js';
import { storeUnavailable } from '../leases/unavailable.js';

export type ListedProxy = ProxyResource & {
  healthy: boolean;
  leasable: boolean;
  activeLeases: number;
  /** Only when so: the proxy's stored lease state cannot be read, and it counts as full (activeLeases). */
  leaseStateInvalid?: true;
};

export interface ListFilter {
  healthy?: boolean;
  leasable?: boolean;
  /** Only proxies speaking it: the protocol rule lease selection applies (endpoint.ts proxyProtocol). */
  protocol?: ProxyProtocol;
}

export interface DiscoveryView {
  /**
   * Reads the proxies to list (`read`: the proxy store's list or page), a store that could not answer
   * told as a lease-store failure is: the listing's lease counts and its proxies fail together in an
   * outage, and the first read is the one that meets it.
   */
  read<T>(read: () => Promise<T>): Promise<T>;
  list(proxies: readonly ProxyResource[], filter: ListFilter): Promise<ListedProxy[]>;
}

/** A listing's Retry-After when the store could not answer (docs/operations.md § Lease store unavailable). */
const LIST_RETRY = { retryAfterSeconds: 2 };

const keep = (p: ListedProxy, f: ListFilter) =>
  (f.healthy === undefined || p.healthy === f.healthy) &&
  (f.leasable === undefined || p.leasable === f.leasable) &&
  (f.protocol === undefined || proxyProtocol(p) === f.protocol);

export function discoveryView(deps: {
  store: Pick<LeaseStore, 'usage' | 'refresh'>;
  gate: Pick<OwnershipGate, 'leasable'>;
  clock: Clock;
  /** Resolves once the lease views (and the gateway's) have loaded. */
  ready: () => Promise<void>;
  metrics: LeaseMetrics;
  log: Logger;
}): DiscoveryView {
  return {
    async read(read) {
      try {
        return await read();
      } catch (err) {
        if (!(err instanceof StoreError && err.kind === 'unavailable')) throw err;
        storeUnavailable(deps, 'list', err);
        throw new ApiError(503, 'unavailable', 'the proxies are unavailable; retry', LIST_RETRY, {
          cause: err,
        });
      }
    },
    async list(proxies, filter) {
      try {
        await deps.ready();
        await deps.store.refresh(proxies.map((p) => p.name));
      } catch (err) {
        if (!(err instanceof LeaseStoreError)) throw err;
        storeUnavailable(deps, 'list', err);
        throw new ApiError(503, 'unavailable', 'lease counts are unavailable; retry', LIST_RETRY, {
          cause: err,
        });
      }
      const now = deps.clock.now();
      deps.metrics.leaseRequest('list', 'ok');
      return proxies
        .map((p) => {
          const healthy = isLeasable(p);
          const leasable = healthy && !isCordoned(p) && deps.gate.leasable(p);
          const usage = deps.store.usage(p, now);
          // A lease state that cannot be read counts as full (the store fails closed): listed as its
          // capacity and said so, not as the store's internal "full" (Number.MAX_SAFE_INTEGER leases).
          if (usage.unreadable)
            return {
              ...p,
              healthy,
              leasable,
              activeLeases: p.spec.capacity,
              leaseStateInvalid: true as const,
            };
          return { ...p, healthy, leasable, activeLeases: usage.active };
        })
        .filter((p) => keep(p, filter));
    },
  };
}

/**
 * A listed proxy as a crawler sees it: without `spec.cloudInit`. A crawler needs a proxy's attributes,
 * protocol, health and address, never how its VM boots; and an operator's own startup script (`inline`)
 * is theirs — it may configure anything, and is listed to admins only.
 */
export function crawlerView(p: ListedProxy): ListedProxy {
  if (!('cloudInit' in p.spec) || p.spec.cloudInit === undefined) return p;
  const { cloudInit: _, ...spec } = p.spec;
  return { ...p, spec } as ListedProxy;
}

/** Without the lease API wired: the healthy filter and flag still work; nothing is leasable, no counts. */
export const healthOnlyView: DiscoveryView = {
  read: (read) => read(),
  async list(proxies, filter) {
    return proxies
      .map((p) => ({ ...p, healthy: isLeasable(p), leasable: false, activeLeases: 0 }))
      .filter((p) => keep(p, filter));
  },
};
