// What the lease routes record (seed §9: each consumer declares its own small recorder interface; only
// the composition root knows prom-client). `promLeaseMetrics` is that root's implementation.
import { Counter, Gauge, type Registry } from 'prom-client';
import { reusedRead } from '../reused-read.js';

export type LeaseOp = 'acquire' | 'renew' | 'release' | 'report' | 'list';

export interface LeaseMetrics {
  leaseRequest(op: LeaseOp, outcome: string): void;
}

export const noLeaseMetrics: LeaseMetrics = { leaseRequest: () => {} };

/**
 * How long one count of the active leases serves the scrapes of /metrics. Any crawler token may scrape, at
 * any rate, and each count is a billed aggregation query (docs/cost.md): one per this interval per API
 * instance bounds what scraping can spend, whatever the rate.
 */
export const LEASES_ACTIVE_MAX_AGE_MS = 15_000;

export interface LeaseMetricsOptions {
  /** Default LEASES_ACTIVE_MAX_AGE_MS. */
  maxAgeMs?: number;
  nowMs: () => number;
  /** A failed count, once per count (not per scrape that waited on it). */
  onError?: (err: unknown) => void;
}

/**
 * proxyplane_lease_requests_total{op,outcome} and the scrape-time gauge proxyplane_leases_active, counted
 * from the stored leases (so it never drifts, and every replica reports the same fleet-wide number:
 * aggregate with max, not sum) at most once per LEASES_ACTIVE_MAX_AGE_MS (reusedRead). A failed count
 * leaves the last value and is logged.
 */
export function promLeaseMetrics(
  registry: Registry,
  activeLeases: () => Promise<number>,
  opts: LeaseMetricsOptions,
): LeaseMetrics {
  const requests = new Counter({
    name: 'proxyplane_lease_requests_total',
    help: 'Discovery and lease requests by operation and outcome.',
    labelNames: ['op', 'outcome'] as const,
    registers: [registry],
  });
  const active = reusedRead(activeLeases, {
    maxAgeMs: opts.maxAgeMs ?? LEASES_ACTIVE_MAX_AGE_MS,
    nowMs: opts.nowMs,
    onError: opts.onError ?? (() => {}),
  });
  new Gauge({
    name: 'proxyplane_leases_active',
    help: 'Leases active now, over all proxies.',
    registers: [registry],
    async collect() {
      const n = await active();
      if (n !== undefined) this.set(n);
    },
  });
  return { leaseRequest: (op, outcome) => requests.inc({ op, outcome }) };
}
