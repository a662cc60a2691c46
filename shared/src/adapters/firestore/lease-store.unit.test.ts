// FirestoreLeaseStore on a Firestore that stops answering: every wait is bounded, so a degraded Firestore
// costs a prompt 503 with Retry-After, not requests held until Cloud Run's 300 s request timeout.
import type { Firestore, QuerySnapshot } from '@google-cloud/firestore';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../ports/clock.js';
import { memoryLogger } from '../log/json-logger.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { STORE_CALL_DEADLINE_MS } from './lease-state-access.js';
import { FirestoreLeaseStore } from './lease-store.js';

const never = () => new Promise<never>(() => {});

/**
 * A Firestore whose cooldown listener answers an empty snapshot at once; the whole read of the lease
 * states, each document read and each commit answer as told (`never`: not at all).
 */
function stubFirestore(calls: {
  loadAll: () => Promise<unknown>;
  read?: () => Promise<unknown>;
  commit?: () => Promise<unknown>;
}) {
  const counts = { loadAll: 0 };
  const db = {
    collection: (name: string) => ({
      get: () => {
        if (name === LEASE_COLLECTIONS.leaseState) counts.loadAll++;
        return calls.loadAll();
      },
      where: () => ({
        onSnapshot: (next: (s: QuerySnapshot) => void) => {
          next({ docs: [], docChanges: () => [] } as unknown as QuerySnapshot);
          return () => {};
        },
      }),
      doc: (id: string) => ({ id, path: `${name}/${id}`, get: calls.read ?? never }),
    }),
    batch: () => ({ create() {}, update() {}, delete() {}, commit: calls.commit ?? never }),
  } as unknown as Firestore;
  return { db, counts };
}

function storeOn(db: Firestore, clock = new ManualClock()) {
  return new FirestoreLeaseStore(db, { clock, settings: { cooldownWindowMs: 60_000 }, log: memoryLogger() });
}

/** `p`'s outcome, or 'pending' when it has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'pending' | { rejected: unknown }> {
  return Promise.race([
    p.catch((err: unknown) => ({ rejected: err })),
    new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms)),
  ]);
}

const lease = {
  id: 'lease-1',
  target: null,
  exclusive: false,
  holder: 'test',
  ttlSeconds: 60,
};
const candidates = [{ name: 'p1', uid: 'u1', capacity: 2 }];

afterEach(() => {
  vi.useRealTimers();
});

describe('FirestoreLeaseStore on a Firestore that does not answer', () => {
  it('a first read of the lease states that hangs answers not_ready by the deadline, and is read again later', async () => {
    const { db, counts } = stubFirestore({ loadAll: never });
    const clock = new ManualClock();
    const store = storeOn(db, clock).start();
    // The read hangs: ready() is bounded by its timeout, as the listener's wait is.
    expect(await within(store.ready(50), 1_000)).toEqual({
      rejected: expect.objectContaining({ kind: 'not_ready' }),
    });
    // Given up like a failed read: refused at once within a second, then read again (not waited on forever).
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    expect(counts.loadAll).toBe(1);
    clock.advance(1_001);
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    expect(counts.loadAll).toBe(2);
    await store.stop();
  });

  it.each([
    ['read of the lease state', { read: never }],
    ['commit', { read: async () => ({ exists: false }), commit: never }],
  ])(
    'a %s that hangs under the proxy lock answers unavailable by the call deadline, and frees the lock',
    async (_, calls) => {
      const { db } = stubFirestore({ loadAll: async () => ({ docs: [] }), ...calls });
      const store = storeOn(db).start();
      await store.ready(1_000);
      vi.useFakeTimers();
      const first = store.grant({ candidates, lease }).catch((err: unknown) => err);
      // Queued behind the first on p1's lock: it waits one deadline for its turn, then one for its own call.
      const second = store
        .grant({ candidates, lease: { ...lease, id: 'lease-2' } })
        .catch((err: unknown) => err);
      await vi.advanceTimersByTimeAsync(STORE_CALL_DEADLINE_MS);
      expect(await first).toMatchObject({ kind: 'unavailable' });
      await vi.advanceTimersByTimeAsync(STORE_CALL_DEADLINE_MS);
      expect(await second).toMatchObject({ kind: 'unavailable' });
      await store.stop();
    },
  );
});
