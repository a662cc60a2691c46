// What the lease routes record (seed §9: each consumer declares its own small recorder interface; only
// the composition root knows prom-client). `promLeaseMetrics` is that root's implementation.
import { Counter, Gauge, type Registry } from 'prom-client';

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
 * `read` at most once per `maxAgeMs` and one at a time: a scrape while a count runs waits on it, one inside
 * the interval takes the last value. A failure starts the interval as a success does (a Firestore outage is
 * no reason to ask on every scrape), keeps the last value and is reported once. undefined until a count
 * has succeeded.
 */
export function reusedRead<T>(
  read: () => Promise<T>,
  opts: { maxAgeMs: number; nowMs: () => number; onError: (err: unknown) => void },
): () => Promise<T | undefined> {
  let value: T | undefined;
  let startedAt: number | null = null;
  let running: Promise<void> | null = null;
  return async () => {
    const now = opts.nowMs();
    if (running === null && (startedAt === null || now - startedAt >= opts.maxAgeMs)) {
      startedAt = now;
      running = (async () => {
        try {
          value = await read();
        } catch (err) {
          opts.onError(err);
        } finally {
          running = null;
        }
      })();
    }
    if (running !== null) await running;
    return value;
  };
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
