import type { Query, QueryDocumentSnapshot, QuerySnapshot } from '@google-cloud/firestore';
import { describe, expect, it, vi } from 'vitest';
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
