// One count serving many scrapes of the API's /metrics: any crawler token may scrape, at any rate, and the
// scrape-time gauges (proxyplane_leases_active, proxyplane_proxies{phase}) are billed aggregation queries
// (docs/cost.md). Used by both, so what scraping can spend is bounded the same way for each.

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
