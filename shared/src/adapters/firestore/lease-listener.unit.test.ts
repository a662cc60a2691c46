import type { Query, QueryDocumentSnapshot, QuerySnapshot } from '@google-cloud/firestore';
import { describe, expect, it, vi } from 'vitest';
import { retainedBytes } from '../../testing/retained-heap.js';
import { memoryLogger } from '../log/json-logger.js';
import { listenCollection } from './lease-listener.js';

/** A query whose subscriptions are recorded: each answers a first snapshot of `docs` at once. */
function fakeQuery(docs: string[]) {
  const subs: { open: boolean }[] = [];
  const query = {
    onSnapshot(next: (s: QuerySnapshot) => void) {
      const sub = { open: true };
      subs.push(sub);
      next({ docs: docs.map((id) => ({ id })), docChanges: () => [] } as unknown as QuerySnapshot);
      return () => {
        sub.open = false;
      };
    },
  } as unknown as Query;
  return { query, subs };
}

describe('listenCollection renewEveryMs', () => {
  it('re-subscribes on schedule, the old subscription closed, the view reset from the new one', () => {
    // A filter on the subscription's time (the cooldowns still running) is fixed for its life: the
    // Firestore client's watch keeps every document that matched since until it is deleted. Renewing the
    // subscription takes the time again and lets the client drop what has ended.
    vi.useFakeTimers();
    try {
      const { query, subs } = fakeQuery(['a']);
      const resets: string[][] = [];
      const sink = {
        reset: (d: readonly QueryDocumentSnapshot[]) => resets.push(d.map((x) => x.id)),
        apply: () => {},
      };
      let built = 0;
      const l = listenCollection(
        () => {
          built++;
          return query;
        },
        sink,
        { name: 'cooldowns', log: memoryLogger(), renewEveryMs: 3_600_000 },
      );
      expect(subs).toHaveLength(1);
      vi.advanceTimersByTime(3_600_000);
      expect(subs.map((s) => s.open)).toEqual([false, true]);
      expect(built).toBe(2);
      expect(resets).toEqual([['a'], ['a']]);
      l.stop();
      vi.advanceTimersByTime(3_600_000);
      expect(subs.map((s) => s.open)).toEqual([false, false]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('listenCollection ready()', () => {
  /** A query whose first snapshot never comes (Firestore unreachable, or a listen it refuses forever). */
  const silentQuery = { onSnapshot: () => () => {} } as unknown as Query;
  const sink = { reset: () => {}, apply: () => {} };

  it('names the collection when its first snapshot has not come in time, and resolves once it has', async () => {
    const silent = listenCollection(silentQuery, sink, { name: 'cooldowns', log: memoryLogger() });
    await expect(silent.ready(5)).rejects.toThrow('cooldowns listener not loaded after 5 ms');
    silent.stop();
    const { query } = fakeQuery(['a']);
    const loaded = listenCollection(query, sink, { name: 'proxies', log: memoryLogger() });
    await loaded.ready(5);
    loaded.stop();
  });

  it('requests that gave up waiting for a first snapshot that never comes leave nothing behind', {
    timeout: 60_000,
  }, async () => {
    // Every discovery and lease request waits on it: racing each against the pending load kept ~1.6 KB
    // a request for as long as Firestore stayed unreachable.
    const listener = listenCollection(silentQuery, sink, { name: 'proxies', log: memoryLogger() });
    const requests = 5_000;
    const retained = await retainedBytes(async () => {
      const answers = await Promise.allSettled(Array.from({ length: requests }, () => listener.ready(1)));
      expect(answers.every((a) => a.status === 'rejected')).toBe(true);
    });
    expect(retained / requests).toBeLessThan(100);
    listener.stop();
  });
});
