// The gateway control plane's stores on a Firestore that takes every call and never answers (a stub
// client): given a deadline (the API's, wiring.ts), each call the API makes is WorkerStoreError
// ('unavailable') at it — the workers API's 503 + Retry-After — and a write given up is unavailable (an
// unknown outcome), never 'conflict'. Unpaged listings wait listDeadlineMs. The same over the emulator,
// through the routes: test/integration/api-worker-store-stall.test.ts.

import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { record as workerRecord } from '../../../../test/support/worker-records.js';
import { WorkerStoreError } from '../../ports/workers.js';
import { FirestoreReclaimStore } from './ownership-reclaim-store.js';
import { FirestoreOwnershipStore } from './ownership-store.js';
import { FirestoreGatewayPoolReader } from './snapshot-pool-reader.js';
import { FirestoreRoutingStore } from './snapshot-routing-store.js';
import { FirestoreSnapshotStore } from './snapshot-store.js';
import { FirestoreWorkerStore } from './worker-store.js';

const never = () => new Promise<never>(() => {});

/** A client every call of which (reads, queries, writes, batches, transactions) never answers. */
function silentFirestore(): Firestore {
  const query: Record<string, unknown> = { get: never };
  for (const chained of ['where', 'orderBy', 'limit', 'startAfter', 'select']) query[chained] = () => query;
  const doc = (): Record<string, unknown> => ({
    get: never,
    create: never,
    update: never,
    set: never,
    delete: never,
    collection: () => collection,
  });
  const collection: Record<string, unknown> = { ...query, doc };
  const batch = () => {
    const b: Record<string, unknown> = { commit: never };
    for (const op of ['create', 'update', 'set', 'delete']) b[op] = () => b;
    return b;
  };
  return {
    collection: () => collection,
    getAll: never,
    batch,
    runTransaction: never,
  } as unknown as Firestore;
}

const CALL_MS = 20;
const LIST_MS = 200;
const opts = { callDeadlineMs: CALL_MS, listDeadlineMs: LIST_MS };
const version = '1796515200.000000000';
const at = new Date('2026-12-06T00:00:00Z');
const record = workerRecord('gw-1', at);

const db = silentFirestore();
const workers = new FirestoreWorkerStore(db, opts);
const ownership = new FirestoreOwnershipStore(db, opts);
const snapshots = new FirestoreSnapshotStore(db, opts);
const pool = new FirestoreGatewayPoolReader(db, opts);
const routing = new FirestoreRoutingStore(db, opts);
const reclaims = new FirestoreReclaimStore(db, opts);

async function givenUp(call: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = performance.now();
  const err = await call().then(
    () => new Error('answered'),
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - started };
}

describe('never answered: WorkerStoreError unavailable at the call deadline', () => {
  it.each<[string, () => Promise<unknown>]>([
    ['workers.get', () => workers.get('gw-1')],
    ['workers.put (create)', () => workers.put(record, null)],
    ['workers.put (update)', () => workers.put(record, version)],
    ['workers.putOutcomeSequence', () => workers.putOutcomeSequence('gw-1', 2, version, null)],
    ['workers.page', () => workers.page(null, 10)],
    ['ownership.epoch', () => ownership.epoch()],
    ['ownership.read', () => ownership.read()],
    ['ownership.acquireLock', () => ownership.acquireLock('h', at, at)],
    ['ownership.extendLock', () => ownership.extendLock('h', version, at)],
    ['ownership.releaseLock', () => ownership.releaseLock('h', version)],
    ['ownership.commit', () => ownership.commit([], 1, version, at)],
    ['snapshots.header', () => snapshots.header('gw-1')],
    ['snapshots.loadFull', () => snapshots.loadFull('gw-1')],
    ['snapshots.patchHeader', () => snapshots.patchHeader('gw-1', { sentAt: at })],
    [
      'snapshots.patchHeader (guarded)',
      () => snapshots.patchHeader('gw-1', { sentAt: at }, { lockHolder: 'h' }),
    ],
    ['snapshots.save', () => snapshots.save({ workerId: 'gw-1' } as never, { proxies: [] } as never)],
    ['snapshots.sweepParts', () => snapshots.sweepParts(at, 10, at)],
    ['routing.get', () => routing.get()],
    ['routing.revision', () => routing.revision()],
    ['routing.put', () => routing.put({ routes: [], updatedAt: at, updatedBy: 'me' })],
    [
      'reclaims.put',
      () => reclaims.put({ proxy: 'p', uid: null, requestedAt: at, requestedBy: 'me', until: at }),
    ],
    ['reclaims.delete', () => reclaims.delete('p')],
  ])('%s', async (_, call) => {
    // The message names the deadline that fired (the call's, not the listing's): a wall-clock bound on
    // top of it asked a loaded worker to stall under 180 ms in each of these 20 ms windows.
    const { err } = await givenUp(call);
    expect(err).toBeInstanceOf(WorkerStoreError);
    expect((err as WorkerStoreError).kind).toBe('unavailable');
    expect((err as Error).message).toMatch(new RegExp(`no answer from Firestore within ${CALL_MS} ms`));
  });
});

describe('never answered: an unpaged listing is given up at listDeadlineMs', () => {
  it.each<[string, () => Promise<unknown>]>([
    ['workers.listInView', () => workers.listInView(at)],
    ['snapshots.headersOf', () => snapshots.headersOf(['gw-1'])],
    ['snapshots.headersInView', () => snapshots.headersInView(['gw-1'], at)],
    ['pool.inPool', () => pool.inPool()],
    ['reclaims.list', () => reclaims.list(at)],
  ])('%s', async (_, call) => {
    const { err, ms } = await givenUp(call);
    expect(err).toBeInstanceOf(WorkerStoreError);
    expect((err as WorkerStoreError).kind).toBe('unavailable');
    expect((err as Error).message).toMatch(new RegExp(`no answer from Firestore within ${LIST_MS} ms`));
    expect(ms).toBeGreaterThanOrEqual(LIST_MS - 5);
  });
});

it('listDeadlineMs defaults to callDeadlineMs', async () => {
  const store = new FirestoreWorkerStore(db, { callDeadlineMs: CALL_MS });
  const { err } = await givenUp(() => store.listInView(at));
  expect((err as Error).message).toMatch(new RegExp(`within ${CALL_MS} ms`));
});

// The client runs a transaction's body again when its commit is ABORTED — also after the deadline gave the
// call up and the caller was answered 503. A body run again then must not write: a routing PUT without
// If-Match given up, re-run after a newer PUT answered 200, would write its routes over that one.
describe('a transaction given up writes nothing when the client runs its body again', () => {
  const past = new Date('2026-12-01T00:00:00Z');

  /**
   * A client whose runTransaction runs the body, waits past the deadline, and runs it again (ABORTED) —
   * or, `slowRead`, runs it once with reads that answer only past the deadline.
   */
  function rerunningFirestore(exists: boolean, slowRead = false) {
    const writesByRun: number[] = [];
    let rerun!: Promise<unknown>;
    const snap = {
      exists,
      data: () => undefined,
      get: (path: string) =>
        path === 'lock.holder' ? 'h' : path === 'grantedUntil' ? Timestamp.fromDate(past) : undefined,
    };
    const ref = (): Record<string, unknown> => ({ collection: () => ({ doc: ref }) });
    const query: Record<string, unknown> = { get: async () => ({ docs: [{ id: 'gw-1' }] }) };
    for (const chained of ['where', 'limit']) query[chained] = () => query;
    const tx = (run: number) => {
      writesByRun[run] = 0;
      const write = () => {
        writesByRun[run] = (writesByRun[run] ?? 0) + 1;
      };
      const get = async () => {
        if (slowRead) await new Promise((r) => setTimeout(r, CALL_MS * 3));
        return snap;
      };
      return { get, set: write, update: write, delete: write };
    };
    const db = {
      collection: () => ({ ...query, doc: ref }),
      runTransaction: (body: (t: unknown) => Promise<unknown>) => {
        if (slowRead) {
          rerun = body(tx(0));
          return rerun;
        }
        rerun = (async () => {
          await body(tx(0)).catch(() => {}); // its commit ABORTED
          await new Promise((r) => setTimeout(r, CALL_MS * 3));
          return body(tx(1));
        })();
        return rerun;
      },
    } as unknown as Firestore;
    return { db, writesByRun, rerun: () => rerun };
  }

  const transactions: [string, boolean, (db: Firestore) => Promise<unknown>][] = [
    [
      'routing.put',
      true,
      (db) => new FirestoreRoutingStore(db, opts).put({ routes: [], updatedAt: at, updatedBy: 'me' }),
    ],
    [
      'snapshots.save',
      false,
      (db) =>
        new FirestoreSnapshotStore(db, opts).save(
          {
            workerId: 'gw-1',
            version: 2,
            ownershipEpoch: 1,
            checksum: 'c',
            contentDigest: 'd',
            sessionId: null,
            generatedAt: at,
            validUntil: at,
            grantedUntil: null,
            draining: {},
            recent: [],
            sentAt: null,
            proxies: 0,
          },
          { version: 2, proxies: [], routing: [] } as never,
        ),
    ],
    [
      'snapshots.patchHeader (guarded)',
      true,
      (db) => new FirestoreSnapshotStore(db, opts).patchHeader('gw-1', { sentAt: at }, { lockHolder: 'h' }),
    ],
  ];

  it.each(transactions)('%s', async (_, exists, call) => {
    const { db, writesByRun, rerun } = rerunningFirestore(exists);
    const { err } = await givenUp(() => call(db));
    expect((err as WorkerStoreError).kind).toBe('unavailable');
    await expect(rerun()).rejects.toThrow(`no answer from Firestore within ${CALL_MS} ms`);
    expect(writesByRun).toEqual([expect.any(Number), 0]);
    expect(writesByRun[0]).toBeGreaterThan(0);
  });

  it('snapshots.sweepParts (each header in its own transaction)', async () => {
    const { db, writesByRun, rerun } = rerunningFirestore(false);
    const result = await new FirestoreSnapshotStore(db, opts).sweepParts(at, 10, at);
    expect(result).toEqual({ swept: [], failed: [{ workerId: 'gw-1', kind: 'unavailable' }] });
    await expect(rerun()).rejects.toThrow(`no answer from Firestore within ${CALL_MS} ms`);
    expect(writesByRun).toEqual([1, 0]);
  });

  // A body still waiting on its read when the deadline fired: the read answers later, and the body must
  // stage no write — else a routing PUT answered 503 wrote its routes over a newer one answered 200.
  it.each(transactions)('%s, its read answered past the deadline', async (_, exists, call) => {
    const { db, writesByRun, rerun } = rerunningFirestore(exists, true);
    const { err } = await givenUp(() => call(db));
    expect((err as WorkerStoreError).kind).toBe('unavailable');
    await expect(rerun()).rejects.toThrow(`no answer from Firestore within ${CALL_MS} ms`);
    expect(writesByRun).toEqual([0]);
  });
});
