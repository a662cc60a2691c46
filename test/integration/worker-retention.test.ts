// Worker retention against the Firestore emulator (functions/snapshot/src/retention.ts, shared/src/
// adapters/firestore/worker-retention-store.ts): what is stored for a worker gone longer than the
// retention — workers/{id}, snapshots/{id} and its parts, its outcome batches — is deleted by the snapshot
// tick; a live or recently lapsed worker, one the planner still names as an owner, and a header the epoch
// has not moved past are kept; a batch per tick; a second run finds nothing; a worker that registers
// again between the first look and the deleting transaction is not touched. The emulator runs no TTL
// policy, so this is what keeps the local plane's stores bounded as well.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { handleSnapshotEvent, UPKEEP_DEADLINE_MS } from '../../functions/snapshot/src/handler.js';
import { snapshotRunResult } from '../../functions/snapshot/src/job-run.js';
import { retireOldWorkers } from '../../functions/snapshot/src/retention.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { outcomeBatchToFirestore } from '../../shared/src/adapters/firestore/worker-outcome-store.js';
import { FirestoreWorkerRetentionStore } from '../../shared/src/adapters/firestore/worker-retention-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { decideRetention, retentionCutoff } from '../../shared/src/domain/workers/retention.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { StoredFacts } from '../../shared/src/ports/workers-retention.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { record, storeSnapshot } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const workers = new FirestoreWorkerStore(db);
const snapshots = new FirestoreSnapshotStore(db);
const ownership = new FirestoreOwnershipStore(db);
afterAll(() => db.terminate());

const T0 = new Date('2026-12-01T12:00:00Z');
const DAY = 86_400_000;
const ago = (ms: number) => new Date(T0.getTime() - ms);
const RETENTION = 7 * DAY; // firestorePassDeps: the default, a week

/** A worker that died `msAgo`: its session, then its grant 3 min later, with `parts` snapshot parts. */
async function deadWorker(id: string, msAgo: number, o: { parts?: number; epoch?: number } = {}) {
  const gone = ago(msAgo);
  await workers.put(record(id, gone), null);
  // PART_SIZE proxies per part: 2,000 each.
  await storeSnapshot(snapshots, id, 5, new Date(gone.getTime() + 180_000), (o.parts ?? 0) * 2000, o.epoch);
}

async function outcomeBatches(id: string, n: number, receivedAt: Date) {
  const b = db.batch();
  for (let seq = 1; seq <= n; seq++) {
    const doc = outcomeBatchToFirestore({
      workerId: id,
      sessionId: 's',
      sequence: seq,
      receivedAt,
      tallies: new Map([
        ['px-1', { ok: 1, dial: 0, proxyHandshake: 0, responseHeaders: 0, tunnel: 0, latencyMsSum: 5 }],
      ]),
    });
    b.set(db.collection(Collections.workerOutcomes).doc(`${id}__s__${seq}`), {
      ...doc,
      receivedAt: Timestamp.fromDate(receivedAt),
    });
  }
  await b.commit();
}

/** What is stored for a worker: its document, header, parts and outcome batches. */
async function stored(id: string) {
  const [w, h, parts, outcomes] = await Promise.all([
    db.collection(Collections.workers).doc(id).get(),
    db.collection(Collections.snapshots).doc(id).get(),
    db.collection(Collections.snapshots).doc(id).collection('parts').get(),
    db.collection(Collections.workerOutcomes).where('workerId', '==', id).get(),
  ]);
  return { worker: w.exists, header: h.exists, parts: parts.size, outcomes: outcomes.size };
}
const nothing = { worker: false, header: false, parts: 0, outcomes: 0 };

/** Moves the global epoch to `epoch` (owner of `proxy`: `owner`), as a planner commit does. */
async function commitEpoch(epoch: number, proxy = 'px-epoch', owner = 'gw-live') {
  const token = await ownership.acquireLock('setup', T0, new Date(T0.getTime() + 60_000));
  if (!token) throw new Error('setup could not take the planner lock');
  const next = await ownership.commit(
    [{ proxy, kind: 'assigned', next: { proxy, owner, since: epoch, drainEpoch: null } }],
    epoch,
    token,
    T0,
  );
  await ownership.releaseLock('setup', next);
}

const snapshotTick = {
  data: {
    message: {
      data: Buffer.from(JSON.stringify({ job: 'snapshot-tick' })).toString('base64'),
      messageId: '1',
    },
  },
};

beforeEach(async () => {
  await clearProject(projectId);
});

describe('the snapshot tick deletes what is stored for workers past retention', () => {
  it('deletes a dead worker whole, keeps every worker that may still matter, and is idempotent', async () => {
    const clock = new ManualClock(T0);
    const deps = firestorePassDeps(db, clock, []);
    // Gone 8 days: document, header, 2 parts and outcome batches all go.
    await deadWorker('gw-dead', 8 * DAY, { parts: 2 });
    await outcomeBatches('gw-dead', 3, ago(8 * DAY + 60_000));
    // An orphan header (its document deleted by hand), gone 9 days.
    await storeSnapshot(snapshots, 'gw-orphan', 7, ago(9 * DAY));
    // Kept: live; lapsed 2 days ago; gone 8 days but still named by an ownership record.
    await workers.put(record('gw-live', new Date(T0.getTime() + 30_000)), null);
    await storeSnapshot(snapshots, 'gw-live', 9, new Date(T0.getTime() + 180_000));
    await deadWorker('gw-recent', 2 * DAY);
    await deadWorker('gw-owner', 8 * DAY);
    await commitEpoch(2, 'px-owned', 'gw-owner');
    // Gone 8 days, but its header was built at the current epoch (3, below): the document goes, the
    // header waits (a returning id would restart at version 1 within the epoch the gateway holds).
    await deadWorker('gw-same-epoch', 8 * DAY, { epoch: 3 });
    await commitEpoch(3);

    expect(await retireOldWorkers(deps)).toEqual({ retired: 3, failures: 0 });
    expect(await stored('gw-dead')).toEqual(nothing);
    expect(await stored('gw-orphan')).toEqual(nothing);
    expect(await stored('gw-same-epoch')).toEqual({ ...nothing, header: true });
    for (const id of ['gw-live', 'gw-recent', 'gw-owner'])
      expect(await stored(id)).toMatchObject({ worker: true, header: true });

    // Idempotent: nothing more to delete; the held header goes once the epoch moves past it.
    expect(await retireOldWorkers(deps)).toEqual({ retired: 0, failures: 0 });
    expect(await stored('gw-same-epoch')).toEqual({ ...nothing, header: true });
    await commitEpoch(4);
    expect(await retireOldWorkers(deps)).toEqual({ retired: 1, failures: 0 });
    expect(await stored('gw-same-epoch')).toEqual(nothing);
    expect(await stored('gw-live')).toMatchObject({ worker: true, header: true });
  });

  it('rides on the tick: counted in the job run; a worker request runs no retention', async () => {
    const clock = new ManualClock(T0);
    const published: GatewaySnapshotMessage[] = [];
    const deps = firestorePassDeps(db, clock, published);
    await deadWorker('gw-dead', 8 * DAY);
    await commitEpoch(2);
    const tick = (data: object) => ({
      data: { message: { data: Buffer.from(JSON.stringify(data)).toString('base64'), messageId: '1' } },
    });
    const request = await handleSnapshotEvent(deps, tick({ workerId: 'gw-live', reason: 'registered' }));
    expect(request.outcome).toBe('done');
    expect(await stored('gw-dead')).toMatchObject({ worker: true });
    const run = await handleSnapshotEvent(deps, tick({ job: 'snapshot-tick' }));
    expect(snapshotRunResult(run).counts).toMatchObject({ retired: 1, retireFailures: 0 });
    expect(await stored('gw-dead')).toEqual(nothing);
  });

  it('runs on a tick whose pass fails: a pass failing every tick must not stop the cleanup', async () => {
    // A document edited out of shape fails every pass, and a crash-looping gateway keeps the planner busy
    // (each registration asks for a pass): retention needs neither the pass nor its lock, and what it
    // deletes (workers, their subscriptions) piles up toward Pub/Sub's quota meanwhile.
    const clock = new ManualClock(T0);
    const deps = firestorePassDeps(db, clock, []);
    await deadWorker('gw-dead', 8 * DAY);
    await commitEpoch(2);
    const failing = {
      ...deps,
      routing: {
        get: async () => {
          throw new Error('routing document out of shape');
        },
      },
    };
    const tick = {
      data: {
        message: {
          data: Buffer.from(JSON.stringify({ job: 'snapshot-tick' })).toString('base64'),
          messageId: '1',
        },
      },
    };
    const run = await handleSnapshotEvent(failing, tick);
    expect(run.outcome).toBe('busy_tick');
    expect(await stored('gw-dead')).toEqual(nothing);
    // Counted in the job run: a pass failing tick after tick is when failing retention must show.
    expect(snapshotRunResult(run)).toMatchObject({ ok: false, counts: { retired: 1, retireFailures: 0 } });
  });

  it('a tick whose pass ran up to the upkeep deadline begins no sweep and no removal; the next tick does them', async () => {
    // A pass can run close to the timeout; a tick cut off at it is redelivered and runs a pass and upkeep
    // again, unrecorded. Upkeep measures its deadline from the tick's start, not from its own.
    const clock = new ManualClock(T0);
    const log = memoryLogger();
    const deps = { ...firestorePassDeps(db, clock, []), log };
    await deadWorker('gw-dead', 8 * DAY, { parts: 1 });
    await commitEpoch(2);
    const slowPass = {
      ...deps,
      routing: {
        get: async () => {
          clock.advance(UPKEEP_DEADLINE_MS);
          throw new Error('a pass that failed at the deadline');
        },
      },
    };
    const run = await handleSnapshotEvent(slowPass, snapshotTick);
    expect(run).toMatchObject({ outcome: 'busy_tick', upkeep: { swept: 0, retired: 0, retireFailures: 0 } });
    expect(await stored('gw-dead')).toEqual({ worker: true, header: true, parts: 1, outcomes: 0 });
    // (These deps give no subscription reaper: subscription-retention.unit.test.ts has its deadline.)
    expect(log.lines.filter((l) => l.event === 'gateway.upkeep_deadline_reached').map((l) => l.step)).toEqual(
      ['sweep', 'worker_retention'],
    );
    // The next tick, begun early, does it all.
    const next = await handleSnapshotEvent(deps, snapshotTick);
    expect(next).toMatchObject({ outcome: 'done', summary: { swept: 1, retired: 1 } });
    expect(await stored('gw-dead')).toEqual(nothing);
  });

  it('a removal begun just before the deadline ends; the workers after it are left to the next tick', async () => {
    const clock = new ManualClock(T0);
    const base = firestorePassDeps(db, clock, []); // batch 5
    for (const id of ['gw-a', 'gw-b', 'gw-c']) await deadWorker(id, 8 * DAY);
    await commitEpoch(2);
    const removals: string[] = [];
    const deps = {
      ...base,
      retired: Object.assign(Object.create(base.retired), {
        remove: async (...args: Parameters<typeof base.retired.remove>) => {
          removals.push(...args[0]);
          const out = await base.retired.remove(...args);
          clock.advance(5_000); // a slow removal: past the deadline once it ends
          return out;
        },
      }),
      routing: {
        get: async () => {
          clock.advance(UPKEEP_DEADLINE_MS - 1);
          throw new Error('a pass that failed just before the deadline');
        },
      },
    };
    const run = await handleSnapshotEvent(deps, snapshotTick);
    expect(run).toMatchObject({ outcome: 'busy_tick', upkeep: { retired: 1, retireFailures: 0 } });
    expect(removals).toHaveLength(1);
    const left = await Promise.all(['gw-a', 'gw-b', 'gw-c'].map(async (id) => (await stored(id)).worker));
    expect(left.filter((w) => w)).toHaveLength(2);
    // Upkeep begun early does its whole batch.
    clock.set(T0);
    expect(await handleSnapshotEvent(base, snapshotTick)).toMatchObject({ summary: { retired: 2 } });
  });

  it('a batch per tick: a backlog goes `batch` workers at a time', async () => {
    const deps = firestorePassDeps(db, new ManualClock(T0), []); // batch 5
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => deadWorker(`gw-old-${String(i).padStart(2, '0')}`, 8 * DAY + i)),
    );
    await commitEpoch(2);
    const counts = [];
    for (let i = 0; i < 4; i++) counts.push((await retireOldWorkers(deps)).retired);
    expect(counts).toEqual([5, 5, 2, 0]);
    expect((await db.collection(Collections.workers).get()).size).toBe(0);
    expect((await db.collection(Collections.snapshots).get()).size).toBe(0);
  });

  it('workers edited out of shape are passed over: however many sort first, the batch reaches the others', async () => {
    const log = memoryLogger();
    const deps = { ...firestorePassDeps(db, new ManualClock(T0), []), log }; // batch 5
    // Ten broken workers, all gone longer than the sound one, so each range query returns them first: six
    // headers with a worker document (more than a batch), two orphan headers, two worker documents beside
    // a sound header.
    const broken = Array.from({ length: 10 }, (_, i) => `gw-broken-${i}`);
    await Promise.all(broken.map((id, i) => deadWorker(id, 20 * DAY + i)));
    const edit = async (id: string, i: number) => {
      if (i < 6) await db.collection(Collections.snapshots).doc(id).update({ ownershipEpoch: 'two' });
      else if (i < 8) {
        await db.collection(Collections.snapshots).doc(id).update({ parts: -1, grantedUntil: 'soon' });
        await db.collection(Collections.workers).doc(id).delete();
      } else await db.collection(Collections.workers).doc(id).update({ validUntil: 'never' });
    };
    await Promise.all(broken.map(edit));
    await deadWorker('gw-dead', 8 * DAY, { parts: 1 });
    await commitEpoch(2);

    const first = await retireOldWorkers(deps);
    expect(first).toEqual({ retired: 1, failures: 10 });
    expect(await stored('gw-dead')).toEqual(nothing);
    // One line a tick: every broken worker by id, with the failing field paths and none of their values.
    const lines = log.lines.filter((l) => l.event === 'gateway.workers_retention_invalid');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ severity: 'WARNING' });
    const listed = new Map(
      (lines[0]!.workers as Array<{ workerId: string; fields: string[] }>).map((w) => [w.workerId, w.fields]),
    );
    expect([...listed.keys()].sort()).toEqual(broken);
    expect(listed.get('gw-broken-0')).toEqual(['header.ownershipEpoch']);
    expect(listed.get('gw-broken-6')).toEqual(['header.grantedUntil', 'header.parts']);
    expect(listed.get('gw-broken-8')).toEqual(['worker.validUntil']);
    expect(JSON.stringify(lines[0])).not.toMatch(/two|soon|never/);
    // Nothing of theirs is deleted: what they say cannot be trusted.
    for (const id of broken) expect((await stored(id)).header).toBe(true);
    expect((await stored('gw-broken-0')).worker).toBe(true);

    // A broken worker fixed by hand is deleted by the next tick.
    await db.collection(Collections.snapshots).doc('gw-broken-0').update({ ownershipEpoch: 1 });
    expect(await retireOldWorkers(deps)).toEqual({ retired: 1, failures: 9 });
    expect(await stored('gw-broken-0')).toEqual(nothing);
  });

  it('the passing over is bounded: past the scan limit of each query the broken workers hold the tick', async () => {
    const store = new FirestoreWorkerRetentionStore(db, undefined, 5); // 5 documents per query per call
    const deps = { ...firestorePassDeps(db, new ManualClock(T0), []), retired: store }; // batch 5
    const broken = Array.from({ length: 6 }, (_, i) => `gw-broken-${i}`);
    await Promise.all(broken.map((id, i) => deadWorker(id, 20 * DAY + i)));
    await Promise.all(
      broken.map((id) => db.collection(Collections.snapshots).doc(id).update({ ownershipEpoch: 'two' })),
    );
    await deadWorker('gw-dead', 8 * DAY);
    await commitEpoch(2);
    // Each query's first page holds five broken workers: the scan stops there, and gw-dead waits.
    expect(await retireOldWorkers(deps)).toEqual({ retired: 0, failures: 5 });
    expect(await stored('gw-dead')).toMatchObject({ worker: true });
    // The default limit (500) reaches it.
    const wide = { ...deps, retired: new FirestoreWorkerRetentionStore(db) };
    expect(await retireOldWorkers(wide)).toEqual({ retired: 1, failures: 6 });
    expect(await stored('gw-dead')).toEqual(nothing);
  });

  it('a worker with more outcome batches than one page keeps its document until they are gone', async () => {
    const store = new FirestoreWorkerRetentionStore(db, 4);
    const deps = { ...firestorePassDeps(db, new ManualClock(T0), []), retired: store };
    await deadWorker('gw-chatty', 8 * DAY);
    await outcomeBatches('gw-chatty', 6, ago(8 * DAY + 60_000));
    await commitEpoch(2);
    expect(await retireOldWorkers(deps)).toEqual({ retired: 0, failures: 0 });
    expect(await stored('gw-chatty')).toEqual({ worker: true, header: true, parts: 0, outcomes: 2 });
    expect(await retireOldWorkers(deps)).toEqual({ retired: 1, failures: 0 });
    expect(await stored('gw-chatty')).toEqual(nothing);
  });
});

describe('the deleting transaction decides on what it read itself', () => {
  /** A client whose plain batched get (the first look) is followed by `after` before it answers. */
  const lookThen = (after: () => Promise<void>): Firestore =>
    new Proxy(db, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (prop === 'getAll') {
          return async (...refs: Parameters<Firestore['getAll']>) => {
            const read = await target.getAll(...refs);
            await after();
            return read;
          };
        }
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  const cutoff = retentionCutoff(T0, RETENTION);
  const decide = (_: string, facts: StoredFacts) => decideRetention({ ...facts, owns: false }, cutoff, 2);

  it('a worker that registers again after the first look is kept, with its new session', async () => {
    await deadWorker('gw-back', 8 * DAY);
    await commitEpoch(2);
    const live = new Date(T0.getTime() + 30_000);
    const store = new FirestoreWorkerRetentionStore(
      lookThen(async () => {
        // What the API's registration does: a new session on top of the version it read.
        const current = await workers.get('gw-back');
        await workers.put(record('gw-back', live), current?.token ?? null);
      }),
    );
    const result = await store.remove(['gw-back'], cutoff, decide);
    expect(result).toEqual({
      removed: [],
      kept: [{ workerId: 'gw-back', reason: 'session_recent' }],
      failed: [],
    });
    expect(await stored('gw-back')).toMatchObject({ worker: true, header: true });
    expect((await workers.get('gw-back'))?.value?.session.validUntil).toEqual(live);
  });

  it('without the registration the same call deletes it (the test above is not vacuous)', async () => {
    await deadWorker('gw-back', 8 * DAY);
    await commitEpoch(2);
    const store = new FirestoreWorkerRetentionStore(lookThen(async () => {}));
    const result = await store.remove(['gw-back'], cutoff, decide);
    expect(result.removed.map((r) => r.workerId)).toEqual(['gw-back']);
    expect(await stored('gw-back')).toEqual(nothing);
  });
});
