// What the lease routes record (seed §9: each consumer declares its own small recorder interface; only
// the composition root knows prom-client). `promLeaseMetrics` is that root's implementation.
import { Counter, Gauge, type Registry } from 'prom-client';

export type LeaseOp = 'acquire' | 'renew' | 'release' | 'report' | 'list';

export interface LeaseMetrics {
  leaseRequest(op: LeaseOp, outcome: string): void;
}

export const noLeaseMetrics: LeaseMetrics = { leaseRequest: () => {} };

/**
 * proxyplane_lease_requests_total{op,outcome} and the scrape-time gauge proxyplane_leases_active, counted
 * from the stored leases at every scrape (so it never drifts, and every replica reports the same fleet-wide
 * number: aggregate with max, not sum). A failed count leaves the last value and is logged.
 */
export function promLeaseMetrics(
  registry: Registry,
  activeLeases: () => Promise<number>,
  onError: (err: unknown) => void = () => {},
): LeaseMetrics {
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
    async collect() {
      try {
        this.set(await activeLeases());
      } catch (err) {
        onError(err);
      }
    },
  });
  return { leaseRequest: (op, outcome) => requests.inc({ op, outcome }) };
}
