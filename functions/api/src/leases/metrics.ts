// What the lease routes record (seed §9: each consumer declares its own small recorder interface; only
// the composition root knows prom-client). `promLeaseMetrics` is that root's implementation.
import { Counter, Gauge, type Registry } from 'prom-client';

export type LeaseOp = 'acquire' | 'renew' | 'release' | 'report' | 'list';

export interface LeaseMetrics {
  leaseRequest(op: LeaseOp, outcome: string): void;
}

export const noLeaseMetrics: LeaseMetrics = { leaseRequest: () => {} };

/**
 * proxyplane_lease_requests_total{op,outcome} and the scrape-time gauge proxyplane_leases_active (read from
 * the store's view at every scrape, so it never drifts; every replica sees every lease — aggregate with
 * max, not sum).
 */
export function promLeaseMetrics(registry: Registry, activeLeases: () => number): LeaseMetrics {
  const requests = new Counter({
    name: 'proxyplane_lease_requests_total',
    help: 'Discovery and lease requests by operation and outcome.',
    labelNames: ['op', 'outcome'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'proxyplane_leases_active',
    help: 'Leases active now, over all proxies.',
    registers: [registry],
    collect() {
      this.set(activeLeases());
    },
  });
  return { leaseRequest: (op, outcome) => requests.inc({ op, outcome }) };
}
