// The catalog fails closed when its listener stays broken: a revoked permission (an error the Firestore
// client gives up on) must not leave discovery and leases handing out the last view's proxies (deleted,
// unhealthy, pool-bound since) for as long as it lasts. A fake Firestore whose first subscription answers,
// then breaks for good.
import type { Firestore, QuerySnapshot } from '@google-cloud/firestore';
import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
import { parseTraceparent, runInTrace } from '../log/trace-context.js';
import { CATALOG_STALE_LIMIT_MS, FirestoreProxyCatalog } from './proxy-cache.js';

function breakingFirestore() {
  let subscriptions = 0;
  let breakFirst: (err: Error) => void = () => {};
  let healthy = false;
  const db = {
    collection: () => ({
      onSnapshot(next: (s: QuerySnapshot) => void, error: (e: Error) => void) {
        subscriptions++;
        if (subscriptions === 1 || healthy) {
          next({ docs: [], docChanges: () => [] } as unknown as QuerySnapshot);
          breakFirst = error;
        } else setTimeout(() => error(Object.assign(new Error('7 PERMISSION_DENIED'), { code: 7 })), 0);
        return () => {};
      },
    }),
  } as unknown as Firestore;
  return {
    db,
    break: () => breakFirst(Object.assign(new Error('7 PERMISSION_DENIED'), { code: 7 })),
    heal: () => {
      healthy = true;
    },
    subscriptions: () => subscriptions,
  };
}

describe('FirestoreProxyCatalog', () => {
  it('rides out a broken listener on its last view for CATALOG_STALE_LIMIT_MS, then refuses until it is back', async () => {
    vi.useFakeTimers();
    try {
      let now = 0;
      const fs = breakingFirestore();
      const catalog = new FirestoreProxyCatalog(fs.db, { log: memoryLogger(), now: () => now }).start();
      await catalog.ready(1_000);
      fs.break();
      now += CATALOG_STALE_LIMIT_MS - 1;
      await vi.advanceTimersByTimeAsync(CATALOG_STALE_LIMIT_MS - 1);
      await expect(catalog.ready(1_000)).resolves.toBeUndefined();
      expect(fs.subscriptions()).toBeGreaterThan(2); // re-subscribing, and failing, meanwhile
      now += 1;
      await expect(catalog.ready(1_000)).rejects.toThrow(/proxies listener has been failing for 60 s/);
      // Back: the next subscription's full view clears it.
      fs.heal();
      await vi.advanceTimersByTimeAsync(60_000);
      await expect(catalog.ready(1_000)).resolves.toBeUndefined();
      catalog.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('started by a request, its listener and idle timer log under no request trace afterwards', async () => {
    // The first discovery request starts what serves every later one: a retry or the idle stop, hours on,
    // must not be filed under that one request's trace in Cloud Logging.
    let subscriptions = 0;
    const db = {
      collection: () => ({
        onSnapshot(next: (s: QuerySnapshot) => void, error: (e: Error) => void) {
          next({ docs: [], docChanges: () => [] } as unknown as QuerySnapshot);
          // The first subscription breaks a moment later, from the client's own callbacks.
          if (++subscriptions === 1)
            setTimeout(() => error(Object.assign(new Error('14 UNAVAILABLE'), { code: 14 })), 5);
          return () => {};
        },
      }),
    } as unknown as Firestore;
    const log = memoryLogger({ traceProject: 'p' });
    const catalog = new FirestoreProxyCatalog(db, { log, idleMs: 50 }).start();
    const trace = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    await runInTrace(trace, async () => {
      await catalog.ready(1_000);
      log.info('inside the request');
    });
    for (let i = 0; i < 100 && !log.lines.some((l) => String(l.message).includes('listener stops')); i++)
      await new Promise((r) => setTimeout(r, 10));
    catalog.stop();
    const traced = (m: string) =>
      log.lines.find((l) => String(l.message).includes(m))?.['logging.googleapis.com/trace'];
    expect(traced('inside the request')).toBe('projects/p/traces/4bf92f3577b34da6a3ce929d0e0e4736');
    expect(log.lines.some((l) => String(l.message).includes('re-subscribing'))).toBe(true);
    expect(traced('re-subscribing')).toBeUndefined();
    expect(log.lines.some((l) => String(l.message).includes('listener stops'))).toBe(true);
    expect(traced('listener stops')).toBeUndefined();
  });
});
