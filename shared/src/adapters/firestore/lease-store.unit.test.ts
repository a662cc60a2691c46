// FirestoreLeaseStore on a Firestore that stops answering: every wait is bounded, so a degraded Firestore
// costs a prompt 503 with Retry-After, not requests held until Cloud Run's 300 s request timeout.
import { type Firestore, type QuerySnapshot, Timestamp } from '@google-cloud/firestore';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../ports/clock.js';
import { retainedBytes } from '../../testing/retained-heap.js';
import { memoryLogger } from '../log/json-logger.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { encodeState } from './lease-converter.js';
import { STORE_CALL_DEADLINE_MS } from './lease-state-access.js';
import { FirestoreLeaseStore, LOAD_PENDING_MS, LOAD_RETRY_MS, LOCK_WAIT_MS } from './lease-store.js';

const never = () => new Promise<never>(() => {});

/**
 * A Firestore whose cooldown listener answers an empty snapshot at once; the whole read of the lease
 * states, each document read and each commit answer as told (`never`: not at all).
 */
function stubFirestore(calls: {
  loadAll: () => Promise<unknown>;
  read?: () => Promise<unknown>;
  /** A refresh's read of several states (default: none of them exists). */
  getAll?: (ids: string[]) => Promise<unknown[]>;
  commit?: () => Promise<unknown>;
  /** The cooldown listener never sends its first snapshot. */
  silentListener?: boolean;
}) {
  const counts = { loadAll: 0, read: 0, getAll: 0 };
  const db = {
    collection: (name: string) => ({
      get: () => {
        if (name === LEASE_COLLECTIONS.leaseState) counts.loadAll++;
        return calls.loadAll();
      },
      where: () => ({
        onSnapshot: (next: (s: QuerySnapshot) => void) => {
          if (!calls.silentListener) next({ docs: [], docChanges: () => [] } as unknown as QuerySnapshot);
          return () => {};
        },
      }),
      doc: (id: string) => ({
        id,
        path: `${name}/${id}`,
        get: () => {
          counts.read++;
          return (calls.read ?? never)();
        },
      }),
    }),
    getAll: (...refs: { id: string }[]) => {
      counts.getAll++;
      const ids = refs.map((r) => r.id);
      return calls.getAll ? calls.getAll(ids) : Promise.resolve(ids.map((id) => ({ id, exists: false })));
    },
    batch: () => ({ create() {}, update() {}, delete() {}, commit: calls.commit ?? never }),
  } as unknown as Firestore;
  return { db, counts };
}

/** By default the ManualClock's steps stand for elapsed time as well (twoClocks moves them apart). */
function storeOn(db: Firestore, clock = new ManualClock(), monotonicNow = () => clock.now().getTime()) {
  return new FirestoreLeaseStore(db, {
    clock,
    monotonicNow,
    settings: { cooldownWindowMs: 60_000 },
    log: memoryLogger(),
  });
}

/** A wall clock and a monotonic one, moved apart: the wall clock stepped back an hour (NTP, a VM resumed). */
function twoClocks() {
  const wall = new ManualClock();
  const mono = { ms: 5_000 };
  return {
    wall,
    monotonicNow: () => mono.ms,
    /** `ms` pass; meanwhile the wall clock is stepped back an hour. */
    elapseWithWallBack(ms: number) {
      mono.ms += ms;
      wall.advance(ms - 3_600_000);
    },
  };
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
  it('a first read of the lease states that hangs answers not_ready by the deadline, and is read again once it is long unanswered', async () => {
    const { db, counts } = stubFirestore({ loadAll: never });
    const clock = new ManualClock();
    const store = storeOn(db, clock).start();
    // The read hangs: ready() is bounded by its timeout, as the listener's wait is.
    expect(await within(store.ready(50), 1_000)).toEqual({
      rejected: expect.objectContaining({ kind: 'not_ready' }),
    });
    // Still pending, it is waited on again rather than read anew: a slow read may yet land.
    clock.advance(1_001);
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    expect(counts.loadAll).toBe(1);
    // Unanswered that long, it is likelier lost than slow: read again (not waited on forever).
    clock.advance(LOAD_PENDING_MS);
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    expect(counts.loadAll).toBe(2);
    await store.stop();
  });

  // Started while Firestore refuses it (IAM still propagating): the read of the lease states fails at once
  // and the listener has no first snapshot. A request within the second after answered 503 — and its wait
  // on the listener, already started, rejected unhandled at its deadline: Node 20 exits on that, and the
  // replica crash-looped for as long as the outage lasted instead of answering 503.
  it('a request right after the first read failed answers not_ready and leaves no rejection unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { db } = stubFirestore({
        loadAll: async () => Promise.reject(Object.assign(new Error('denied'), { code: 7 })),
        silentListener: true,
      });
      const store = storeOn(db).start();
      await new Promise((r) => setImmediate(r));
      await expect(store.ready(20)).rejects.toMatchObject({ kind: 'not_ready' });
      await new Promise((r) => setTimeout(r, 80));
      expect(unhandled).toEqual([]);
      await store.stop();
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  // Firestore stalls: the commits in flight hang, every later grant's writes queue behind them and its
  // request answers 503 at its deadline. When Firestore came back the queue was sent: the first stale
  // grant still matched the stored version and landed, a lease nobody holds, for its TTL.
  it('grants that gave up while their writes queued behind a stalled commit never send them', async () => {
    const hanging: Array<(err: unknown) => void> = [];
    let commits = 0;
    const { db } = stubFirestore({
      loadAll: async () => ({ docs: [] }),
      read: async () => ({ exists: false }),
      commit: () => {
        commits++;
        return new Promise((_, reject) => hanging.push(reject));
      },
    });
    const store = storeOn(db).start();
    await store.ready(1_000);
    vi.useFakeTimers();
    const answers: unknown[] = [];
    // One grant per proxy (no proxy lock between them): two commits go out, the rest queue.
    for (let i = 1; i <= 6; i++)
      void store
        .grant({
          candidates: [{ name: `p${i}`, uid: `u${i}`, capacity: 2 }],
          lease: { ...lease, id: `lease-${i}` },
        })
        .then(
          (outcome) => answers.push(outcome),
          (err: unknown) => answers.push(err),
        );
    await vi.advanceTimersByTimeAsync(STORE_CALL_DEADLINE_MS + 100);
    expect(answers).toEqual(Array(6).fill(expect.objectContaining({ kind: 'unavailable' })));
    const sentWhileStalled = commits;
    // Firestore answers again (the stalled commits fail): nothing of the requests that gave up is sent.
    for (const fail of hanging.splice(0)) fail(Object.assign(new Error('unavailable'), { code: 14 }));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(commits).toBe(sentWhileStalled);
    await store.stop();
  });

  it('requests that gave up on a first read that never lands leave nothing behind', {
    timeout: 60_000,
  }, async () => {
    // A replica whose Firestore never answers (IAM broken at deploy) answers 503 for as long as that lasts,
    // to crawlers that retry: racing each request against the pending read kept ~1 KB a request.
    const { db } = stubFirestore({ loadAll: never });
    const store = storeOn(db).start();
    const requests = 5_000;
    const retained = await retainedBytes(async () => {
      const answers = await Promise.allSettled(Array.from({ length: requests }, () => store.ready(1)));
      expect(answers.every((a) => a.status === 'rejected')).toBe(true);
    });
    expect(retained / requests).toBeLessThan(100);
    await store.stop();
  });

  it('a first read of the lease states slower than the wait of ready() is kept when it lands', async () => {
    let land!: (snap: unknown) => void;
    const slow = new Promise((r) => (land = r));
    const { db, counts } = stubFirestore({ loadAll: () => slow });
    const clock = new ManualClock();
    const store = storeOn(db, clock).start();
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    land({ docs: [] });
    // The next request, a while later, finds the replica ready: no second read of the whole collection
    // (given up at every wait, a degraded Firestore's reads never made a replica ready).
    clock.advance(1_001);
    await store.ready(50);
    expect(counts.loadAll).toBe(1);
    await store.stop();
  });

  it('a read of the lease states replaced by a newer one, long unanswered, is kept when it lands first', async () => {
    const lands: ((snap: unknown) => void)[] = [];
    const { db, counts } = stubFirestore({ loadAll: () => new Promise((r) => lands.push(r)) });
    const clock = new ManualClock();
    const store = storeOn(db, clock).start();
    clock.advance(LOAD_PENDING_MS);
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    expect(counts.loadAll).toBe(2);
    lands[0]?.({ docs: [] });
    await store.ready(50);
    expect(counts.loadAll).toBe(2);
    await store.stop();
  });

  it.each([
    ['read of the lease state', { read: never }],
    ['commit', { read: async () => ({ exists: false }), commit: never }],
  ])(
    'a %s that hangs under the proxy lock answers unavailable by the call deadline, and so do those queued behind it',
    async (_, calls) => {
      const { db } = stubFirestore({ loadAll: async () => ({ docs: [] }), ...calls });
      const store = storeOn(db).start();
      await store.ready(1_000);
      vi.useFakeTimers();
      const answers: unknown[] = [];
      for (const id of Array.from({ length: 10 }, (_, i) => `lease-${i + 1}`))
        void store.grant({ candidates, lease: { ...lease, id } }).then(
          (outcome) => answers.push(outcome),
          (err: unknown) => answers.push(err),
        );
      // Queued on p1's lock, each holder's call ends at its deadline; those whose turn would come past
      // LOCK_WAIT_MS give up there rather than wait a deadline per request ahead of them (the tenth's
      // turn came at 45 s, its answer at 50).
      await vi.advanceTimersByTimeAsync(LOCK_WAIT_MS + STORE_CALL_DEADLINE_MS);
      expect(answers).toEqual(Array(10).fill(expect.objectContaining({ kind: 'unavailable' })));
      expect(store.pending('p1')).toBe(0);
      await store.stop();
    },
  );
});

// Ages the store takes in-process are timed on its monotonic clock. On the wall clock, one stepped back an
// hour made every such age negative for that hour.
describe('FirestoreLeaseStore with its wall clock stepped back', () => {
  it('reads a proxy state again once its view is older than staleAfterMs on the monotonic clock', async () => {
    // Other replicas' releases went unseen for the hour: proxies they freed stayed full on this one.
    const { db, counts } = stubFirestore({ loadAll: async () => ({ docs: [] }) });
    const { wall, monotonicNow, elapseWithWallBack } = twoClocks();
    const store = storeOn(db, wall, monotonicNow).start();
    await store.ready(1_000);
    expect(await store.refresh(['p1'])).toBe(1);
    expect(await store.refresh(['p1'])).toBe(0);
    elapseWithWallBack(1_001);
    expect(await store.refresh(['p1'])).toBe(1);
    expect(counts.getAll).toBe(2);
    await store.stop();
  });

  it('looks once more at a proxy its view holds full, once that view is older than staleAfterMs', async () => {
    // The grant's second look (lease-grant.ts): the view says p1 is full, another replica released since.
    const { wall, monotonicNow, elapseWithWallBack } = twoClocks();
    const held = {
      leaseId: 'other',
      expiresAt: new Date(wall.now().getTime() + 3 * 3_600_000),
      exclusive: false,
    };
    const doc = (entries: (typeof held)[], s: number) => ({
      id: 'p1',
      exists: true,
      data: () => encodeState('p1', entries, wall.now()),
      updateTime: new Timestamp(s, 0),
    });
    const { db, counts } = stubFirestore({
      loadAll: async () => ({ docs: [doc([held], 1)] }),
      read: async () => doc([held], 1),
    });
    const store = storeOn(db, wall, monotonicNow).start();
    await store.ready(1_000);
    const full = [{ name: 'p1', uid: 'u1', capacity: 1 }];
    expect(await store.grant({ candidates: full, lease })).toMatchObject({ kind: 'no_room', atCapacity: 1 });
    expect(counts.read).toBe(0); // a view just read is trusted to say full
    elapseWithWallBack(1_001);
    expect(await store.grant({ candidates: full, lease })).toMatchObject({ kind: 'no_room', atCapacity: 1 });
    expect(counts.read).toBe(1);
    await store.stop();
  });

  it('reads every lease state again once LOAD_RETRY_MS have passed since the last read failed', async () => {
    // Leases answered 503 for the hour after Firestore was back: ready() never read again meanwhile.
    let fail = true;
    const { db, counts } = stubFirestore({
      loadAll: async () => {
        if (fail) throw Object.assign(new Error('unavailable'), { code: 14 });
        return { docs: [] };
      },
    });
    const { wall, monotonicNow, elapseWithWallBack } = twoClocks();
    const store = storeOn(db, wall, monotonicNow).start();
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    fail = false;
    elapseWithWallBack(LOAD_RETRY_MS + 1);
    await store.ready(1_000);
    expect(counts.loadAll).toBe(2);
    await store.stop();
  });

  it('reads every lease state anew once a hung read has gone unanswered for LOAD_PENDING_MS', async () => {
    // On the wall clock, the hung read was waited on for an hour more: the replica stayed not ready.
    const { db, counts } = stubFirestore({ loadAll: never });
    const { wall, monotonicNow, elapseWithWallBack } = twoClocks();
    const store = storeOn(db, wall, monotonicNow).start();
    expect(await within(store.ready(50), 1_000)).toEqual({
      rejected: expect.objectContaining({ kind: 'not_ready' }),
    });
    expect(counts.loadAll).toBe(1);
    elapseWithWallBack(LOAD_PENDING_MS);
    await expect(store.ready(50)).rejects.toMatchObject({ kind: 'not_ready' });
    expect(counts.loadAll).toBe(2);
    await store.stop();
  });
});
