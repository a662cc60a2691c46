// The catalog fails closed when its listener stays broken: a revoked permission (an error the Firestore
// client gives up on) must not leave discovery and leases handing out the last view's proxies (deleted,
// unhealthy, pool-bound since) for as long as it lasts. A fake Firestore whose first subscription answers,
// then breaks for good.
import type { Firestore, QuerySnapshot } from '@google-cloud/firestore';
import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
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
});
