// One count serving many scrapes of the API's /metrics: any crawler token may scrape, at any rate, and the
// scrape-time gauges (proxyplane_leases_active, proxyplane_proxies{phase}) are billed aggregation queries
// (docs/cost.md). Used by both, so what scraping can spend is bounded the same way for each.
import { withDeadline } from '../../../shared/src/adapters/deadline.js';

/**
 * How long a scrape waits on a count that is running: past it, the scrape takes the last value (the count
 * goes on, bounded by the client's own deadline). Unbounded, a stalled Firestore held every scrape for the
 * client's minute — past Prometheus' and Cloud Monitoring's scrape timeouts (10 s by default), so the whole
 * /metrics answer was lost, not just these gauges.
 */
export const SCRAPE_WAIT_MS = 5_000;

/**
 * `read` at most once per `maxAgeMs` and one at a time: a scrape while a count runs waits on it (at most
 * `waitMs`, default SCRAPE_WAIT_MS), one inside the interval takes the last value. A failure starts the interval as a success does (a Firestore outage is
 * no reason to ask on every scrape), keeps the last value and is reported once. undefined until a count
 * has succeeded.
 */
export function reusedRead<T>(
  read: () => Promise<T>,
  opts: { maxAgeMs: number; nowMs: () => number; onError: (err: unknown) => void; waitMs?: number },
): () => Promise<T | undefined> {
  const waitMs = opts.waitMs ?? SCRAPE_WAIT_MS;
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
    // `running` never rejects (its failure is reported above): past waitMs, the last value.
    if (running !== null)
      await withDeadline(running, waitMs, () => new Error('count still running')).catch(() => {});
    return value;
  };
}
