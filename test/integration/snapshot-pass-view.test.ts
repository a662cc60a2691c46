// The snapshot pass against the Firestore emulator reads only the workers in view (shared/src/domain/
// workers/view.ts): live, or lapsed within the horizon, plus any header still granting something. Dead
// gateway instances (Cloud Run registers one worker id per instance) are left unread, and a ghost's grant
// (a header whose worker document is gone) is still honoured. The pass runs in this process on the real
// Firestore adapters with a manual clock; only the Pub/Sub publisher is a recorder.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { handleSnapshotEvent, type SnapshotHandlerDeps } from '../../functions/snapshot/src/handler.js';
import { snapshotRunResult } from '../../functions/snapshot/src/job-run.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { sweepOldSnapshots } from '../../functions/snapshot/src/sweep.js';
import { FirestoreLeaseActivity } from '../../shared/src/adapters/firestore/ownership-lease-activity.js';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreGatewayPoolReader } from '../../shared/src/adapters/firestore/snapshot-pool-reader.js';
import { FirestoreRoutingStore } from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore, PART_SIZE } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerRetentionStore } from '../../shared/src/adapters/firestore/worker-retention-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { repoRoot } from '../../shared/src/config/local-ports.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import type { OwnershipChange } from '../../shared/src/domain/workers/ownership.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { type GatewaySnapshotMessage, sha256Hex } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { WorkerRecord } from '../../shared/src/ports/workers.js';
import type { SnapshotHeader } from '../../shared/src/ports/workers-snapshots.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { type FirestoreRead, recordingFirestore } from '../support/recording-firestore.js';
import { RecordingSnapshotRequester } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record, storeSnapshot } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const workers = new FirestoreWorkerStore(db);
const snapshots = new FirestoreSnapshotStore(db);
const ownership = new FirestoreOwnershipStore(db);
const proxies = new FirestoreProxyStore(db);
afterAll(() => db.terminate());

const settings = DEFAULT_WORKER_SETTINGS; // horizon 1 h, grant 180 s, skew 5 s
const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const HOUR = 3600;

const storeHeader = (id: string, version: number, grantedUntil: Date, n = 0) =>
  storeSnapshot(snapshots, id, version, grantedUntil, n);

/** What the pass was handed by the worker and snapshot stores, summed over the calls it made. */
interface Reads {
  workerIds: string[];
  headerIds: string[];
}

function passDeps(
  clock: ManualClock,
  published: GatewaySnapshotMessage[],
  reads: Reads,
  firestore: Firestore = db,
): SnapshotHandlerDeps {
  const workers = new FirestoreWorkerStore(firestore);
  const snapshots = new FirestoreSnapshotStore(firestore);
  const seenWorkers = (rs: WorkerRecord[]) => {
    reads.workerIds.push(...rs.map((r) => r.session.workerId));
    return rs;
  };
  const seenHeaders = (hs: Map<string, SnapshotHeader>) => {
    reads.headerIds.push(...hs.keys());
    return hs;
  };
  // Every read the two stores offer is counted, so the test tells "reads everything" from "reads in view".
  const countedWorkers = {
    page: (after: string | null, limit: number) =>
      workers.page(after, limit).then((p) => ({ ...p, records: seenWorkers(p.records) })),
    listInView: (cutoff: Date) => workers.listInView(cutoff).then(seenWorkers),
  };
  const countedSnapshots = Object.assign(Object.create(snapshots) as FirestoreSnapshotStore, {
    headersOf: (ids: readonly string[]) => snapshots.headersOf(ids).then(seenHeaders),
    headersInView: (ids: readonly string[], cutoff: Date) =>
      snapshots.headersInView(ids, cutoff).then(seenHeaders),
  });
  let n = 0;
  return {
    pool: new FirestoreGatewayPoolReader(firestore),
    ownership,
    workers: countedWorkers,
    snapshots: countedSnapshots,
    routing: new FirestoreRoutingStore(db),
    reclaims: new FirestoreReclaimStore(db),
    leases: new FirestoreLeaseActivity(db),
    retired: new FirestoreWorkerRetentionStore(firestore),
    requester: new RecordingSnapshotRequester(),
    publisher: {
      publish: async (m) => {
        published.push(m);
        return String(published.length);
      },
    },
    clock,
    log: memoryLogger(),
    settings,
    sha256: sha256Hex,
    lockMs: 60_000,
    sweep: { afterMs: 7 * 86_400_000, batch: 5 },
    retention: { afterMs: 7 * 86_400_000, batch: 5 },
    newHolder: () => `holder-${++n}`,
  };
}

async function commitOwnership(changes: OwnershipChange[], epoch: number, now: Date) {
  const token = await ownership.acquireLock('setup', now, new Date(now.getTime() + 60_000));
  if (!token) throw new Error('setup could not take the planner lock');
  await ownership.releaseLock('setup', await ownership.commit(changes, epoch, token, now));
}

/** gw-live's session, then one pass: it must succeed and publish gw-live exactly `version`. */
async function passForLiveWorker(clock: ManualClock, version: number) {
  await workers.put(record('gw-live', at(20)), null);
  const published: GatewaySnapshotMessage[] = [];
  const summary = await runSnapshotPass(passDeps(clock, published, { workerIds: [], headerIds: [] }));
  expect(summary).toMatchObject({ failures: 0, published: 1 });
  expect(published.map((m) => [m.workerId, m.version])).toEqual([['gw-live', version]]);
}

/** `proxy` assigned to `owner` at epoch 1, a minute ago. */
const ownedBy = (proxy: string, owner: string) =>
  commitOwnership(
    [{ proxy, kind: 'assigned', next: { proxy, owner, since: 1, drainEpoch: null } }],
    1,
    at(-60),
  );

const DEAD = 40;
const RECENT = 3;

beforeEach(async () => {
  await clearProject(projectId);
});

describe('a snapshot pass reads only the workers in view', () => {
  it('many dead instances, a few recently lapsed and one live: only the live and recent ones are read', async () => {
    const clock = new ManualClock(T0);
    // Dead instances: lapsed two hours to two days ago, each with the header its last snapshot left.
    await Promise.all(
      Array.from({ length: DEAD }, async (_, i) => {
        const id = `gw-dead-${String(i).padStart(2, '0')}`;
        const gone = at(-2 * HOUR - i * 1200);
        await workers.put(record(id, gone), null);
        await storeHeader(id, 10 + i, new Date(gone.getTime() + settings.grantMs - 1000));
      }),
    );
    const recent = Array.from({ length: RECENT }, (_, i) => `gw-recent-${i}`);
    for (const [i, id] of recent.entries()) {
      const gone = at(-600 * (i + 1));
      await workers.put(record(id, gone), null);
      await storeHeader(id, 3, new Date(gone.getTime() + settings.grantMs - 1000));
    }
    await workers.put(record('gw-live', at(20)), null);
    await proxies.create(poolProxy('pv-1', 1));

    const published: GatewaySnapshotMessage[] = [];
    const reads: Reads = { workerIds: [], headerIds: [] };
    const billed: FirestoreRead[] = [];
    const summary = await runSnapshotPass(passDeps(clock, published, reads, recordingFirestore(db, billed)));

    const inView = ['gw-live', ...recent].sort();
    expect(new Set(reads.workerIds)).toEqual(new Set(inView));
    expect(new Set(reads.headerIds)).toEqual(new Set(recent)); // the live worker has none yet
    expect(reads.workerIds.some((id) => id.startsWith('gw-dead-'))).toBe(false);
    // …and what Firestore was asked for, not only what the stores handed back: no collection read whole,
    // and no read of workers or headers returned more documents than are in view (a store that fetched
    // everything and filtered in memory would pass the checks above and fail these).
    const ofViewCollections = billed.filter(
      (r) => r.collection === 'workers' || r.collection === 'snapshots',
    );
    expect(ofViewCollections.filter((r) => r.how === 'scan')).toEqual([]);
    expect(ofViewCollections.filter((r) => r.docs > inView.length)).toEqual([]);
    expect(billed.filter((r) => r.collection === 'workers' && r.how === 'query').length).toBeGreaterThan(0);
    expect(billed.filter((r) => r.collection === 'snapshots' && r.how === 'query').length).toBeGreaterThan(0);
    // The live worker still gets its snapshot, with the pool proxy, and nothing else is built.
    expect(summary).toMatchObject({ ran: true, published: 1, failures: 0 });
    expect(published.map((m) => [m.workerId, m.version])).toEqual([['gw-live', 1]]);
    expect((await snapshots.loadFull('gw-live'))?.proxies.map((p) => p.name)).toEqual(['pv-1']);
    expect((await ownership.read()).records.get('pv-1')?.owner).toBe('gw-live');

    // The next pass reads the live worker's header through its grant, and still nothing dead.
    clock.advance(40_000);
    reads.workerIds.length = 0;
    reads.headerIds.length = 0;
    await runSnapshotPass(passDeps(clock, published, reads));
    expect(new Set(reads.headerIds)).toEqual(new Set(inView));
    expect(reads.headerIds.some((id) => id.startsWith('gw-dead-'))).toBe(false);
  });

  it('a ghost (worker document gone, grant still running) keeps its proxy until the grant lapses', async () => {
    const clock = new ManualClock(T0);
    await proxies.create(poolProxy('pg-1', 2));
    await storeHeader('gw-ghost', 7, at(100));
    await ownedBy('pg-1', 'gw-ghost');
    await workers.put(record('gw-live', at(20)), null);

    const published: GatewaySnapshotMessage[] = [];
    const reads: Reads = { workerIds: [], headerIds: [] };
    await runSnapshotPass(passDeps(clock, published, reads));
    expect(reads.headerIds).toContain('gw-ghost');
    // Not released while the ghost may still use it: the drain starts, the owner stays.
    expect((await ownership.read()).records.get('pg-1')).toMatchObject({ owner: 'gw-ghost', drainEpoch: 2 });
    expect((await snapshots.loadFull('gw-live'))?.proxies).toEqual([]);

    // Past the grant plus the skew allowance it moves to the live worker.
    clock.set(at(100 + settings.skewMs / 1000 + 1));
    await workers.put(record('gw-live', at(200)), (await workers.get('gw-live'))!.token);
    await runSnapshotPass(passDeps(clock, published, reads));
    expect((await ownership.read()).records.get('pg-1')).toMatchObject({
      owner: 'gw-live',
      drainEpoch: null,
    });
  });

  // A header this release cannot read whole: a route field written by a newer release (GatewayRoute is
  // strict), or an edit by hand. It still says which version was sent and what it granted.
  const outOfShape = (id: string) =>
    db
      .collection('snapshots')
      .doc(id)
      .update({
        routing: [{ name: 'default', match: ['*'], policy: 'least-active', fieldOfANewerRelease: 1 }],
      });

  it('a ghost whose header no longer fits the model whole still keeps its proxy until the grant lapses', async () => {
    const clock = new ManualClock(T0);
    await proxies.create(poolProxy('pg-1', 2));
    await storeHeader('gw-ghost', 7, at(100));
    await outOfShape('gw-ghost');
    // The pass's view reads its version and grant; an admin listing shows no snapshot rather than guesses.
    expect(await snapshots.headersInView(['gw-ghost'], at(-3600))).toEqual(
      new Map([['gw-ghost', expect.objectContaining({ version: 7, grantedUntil: at(100), salvaged: true })]]),
    );
    expect(await snapshots.headersOf(['gw-ghost'])).toEqual(new Map());
    await ownedBy('pg-1', 'gw-ghost');
    await workers.put(record('gw-live', at(20)), null);
    await runSnapshotPass(passDeps(clock, [], { workerIds: [], headerIds: [] }));
    expect((await ownership.read()).records.get('pg-1')).toMatchObject({ owner: 'gw-ghost', drainEpoch: 2 });
  });

  it('a live worker whose header no longer fits the model whole gets a new version, which writes it whole again', async () => {
    const clock = new ManualClock(T0);
    await proxies.create(poolProxy('pg-1', 2));
    await storeHeader('gw-live', 7, at(400)); // past the grant this pass gives (180 s)
    await outOfShape('gw-live');
    await passForLiveWorker(clock, 8);
    // Read whole again, with the grant it had kept: the later of the two.
    expect(await snapshots.header('gw-live')).toMatchObject({ version: 8, grantedUntil: at(400) });
    expect((await snapshots.loadFull('gw-live'))?.proxies.map((p) => p.name)).toEqual(['pg-1']);
  });

  it('a live worker whose header lost its grant and part count still continues above its version', async () => {
    const clock = new ManualClock(T0);
    await storeHeader('gw-live', 7, at(100), 3);
    await db.collection('snapshots').doc('gw-live').update({ grantedUntil: 'soon', parts: 'x' });
    await passForLiveWorker(clock, 8);
    expect(await snapshots.header('gw-live')).toMatchObject({ version: 8, grantedUntil: at(180) });
  });
});

describe('what a steady tick reads: the factors docs/cost.md prices', () => {
  it('a tick that only renews the grant of an up-to-date worker reads the gateway pool as often as priced, and the renewal as many documents', async () => {
    const clock = new ManualClock(T0);
    const POOL = 5;
    for (let i = 0; i < POOL; i++) await proxies.create(poolProxy(`ps-${i}`, i + 1));
    await workers.put(record('gw-live', at(20)), null);
    const published: GatewaySnapshotMessage[] = [];
    await runSnapshotPass(passDeps(clock, published, { workerIds: [], headerIds: [] }));
    expect(published).toHaveLength(1);

    // One deployed tick later, the worker having ACKed that snapshot and kept its session alive by its
    // reports: nothing changed but the time, so all that is due is its grant's renewal.
    const schedule = loadScheduleTable().jobs['snapshot-tick']?.schedule;
    expect(schedule).toBe('* * * * *');
    const tickSeconds = 60;
    clock.advance(tickSeconds * 1000);
    const steady = record('gw-live', at(tickSeconds + 20));
    steady.session.sessionId = record('gw-live', at(20)).session.sessionId; // the same session, kept alive
    // The bound an ACK of it sets (acceptAck): its version, epoch and checksum.
    const taken = published[0]!;
    steady.session.ackedVersion = taken.version;
    steady.session.ackedEpoch = taken.ownershipEpoch;
    steady.session.ackedChecksum = taken.checksum;
    await workers.put(steady, (await workers.get('gw-live'))!.token);
    const billed: FirestoreRead[] = [];
    const summary = await runSnapshotPass(
      passDeps(
        clock,
        published,
        { workerIds: [], headerIds: [] },
        recordingFirestore(db, billed, { documents: true }),
      ),
    );
    expect(summary).toMatchObject({ ran: true, ownershipChanges: 0, published: 1, resent: 0, failures: 0 });

    const poolDocs = billed
      .filter((r) => r.collection === 'proxies' && (r.how === 'query' || r.how === 'scan'))
      .reduce((n, r) => n + r.docs, 0);
    const factor = poolDocs / POOL;
    expect(Number.isInteger(factor) && factor >= 1).toBe(true);
    const cost = readFileSync(join(repoRoot, 'docs/cost.md'), 'utf8');
    expect(cost).toContain(`\`${factor === 1 ? '' : factor}N·T\` (snapshot`);
    expect(cost).toContain(`| ${factor === 1 ? '' : `${factor} × `}(1,000 + 20) reads`);

    // The renewal itself, beside the observes' queries: the stored full snapshot the delta is cut from
    // (its header, its parts), the save transaction's header and planner lock, and the planner lock again
    // in the transaction that marks it sent. (The ownership store here is not recording: the observes' and
    // the lock's own reads are priced apart.)
    const renewal = billed
      .filter((r) => r.how === 'doc' || r.how === 'getAll' || r.how === 'tx')
      .filter((r) => ['snapshots', 'parts', 'ownership'].includes(r.collection));
    expect(renewal.map((r) => `${r.collection}:${r.how}`).sort()).toEqual([
      'ownership:tx',
      'ownership:tx',
      'parts:getAll',
      'snapshots:doc',
      'snapshots:tx',
    ]);
    const perWorker = renewal.reduce((n, r) => n + r.docs, 0);
    expect(cost).toContain(`per worker ${perWorker} reads and 3 writes`);
  });
});

describe('a snapshot pass reads the lease states only of proxies a worker could be given', () => {
  it('none while no gateway is up or the one up has ACKed nothing; the unowned ones once it has', async () => {
    const clock = new ManualClock(T0);
    for (let i = 0; i < 4; i++) await proxies.create(poolProxy(`pl-${i}`, i + 1));
    const asked: string[] = [];
    const published: GatewaySnapshotMessage[] = [];
    const pass = () => {
      const deps = passDeps(clock, published, { workerIds: [], headerIds: [] });
      const leases = deps.leases;
      deps.leases = {
        leased: (ps, now) => {
          asked.push(...ps.map((p) => p.name));
          return leases.leased(ps, now);
        },
      };
      return runSnapshotPass(deps);
    };
    // No gateway: every pool proxy is unowned, and no lease of theirs can decide anything.
    expect(await pass()).toMatchObject({ failures: 0, published: 0 });
    expect(asked).toEqual([]);
    // One registered, not yet ACKed: it gets its first snapshot, and no proxy (plan-pass.ts: assignable).
    const first = record('gw-live', at(20));
    first.session.ackedVersion = null;
    first.session.ackedEpoch = null;
    first.session.ackedChecksum = null;
    await workers.put(first, null);
    expect(await pass()).toMatchObject({ failures: 0, published: 1, ownershipChanges: 0 });
    expect(asked).toEqual([]);
    // Its ACK in: the unowned proxies are lease-checked, then assigned.
    clock.advance(10_000);
    const acked = record('gw-live', at(30));
    acked.session.sessionId = first.session.sessionId;
    acked.session.ackedVersion = published[0]!.version;
    acked.session.ackedEpoch = published[0]!.ownershipEpoch;
    acked.session.ackedChecksum = published[0]!.checksum;
    await workers.put(acked, (await workers.get('gw-live'))!.token);
    expect(await pass()).toMatchObject({ failures: 0, ownershipChanges: 4 });
    expect([...new Set(asked)].sort()).toEqual(['pl-0', 'pl-1', 'pl-2', 'pl-3']);
  });
});

const DAY = 86_400;
const partsOf = async (workerId: string) =>
  (await db.collection('snapshots').doc(workerId).collection('parts').get()).size;
const tickEvent = {
  data: {
    message: {
      data: Buffer.from(JSON.stringify({ job: 'snapshot-tick' })).toString('base64'),
      messageId: '1',
    },
  },
};

describe('the storage sweep keeps headers, drops old parts', () => {
  it('sweeps only snapshots whose grant ended a week ago, a batch per tick, once each', async () => {
    const clock = new ManualClock(T0);
    const old = Array.from({ length: 7 }, (_, i) => `gw-old-${i}`);
    for (const [i, id] of old.entries())
      await storeHeader(id, 20 + i, at(-8 * DAY - i * HOUR), PART_SIZE + 1);
    await storeHeader('gw-yesterday', 5, at(-DAY), 3);
    expect(await partsOf('gw-old-0')).toBe(2);

    const published: GatewaySnapshotMessage[] = [];
    const deps = passDeps(clock, published, { workerIds: [], headerIds: [] });
    // The tick's pass sweeps one batch (5); the next sweeps the rest; then there is nothing left to do.
    const first = await handleSnapshotEvent(deps, tickEvent);
    expect(first.summary?.swept).toBe(5);
    expect((await sweepOldSnapshots(deps)).swept).toBe(2);
    expect((await sweepOldSnapshots(deps)).swept).toBe(0);

    for (const [i, id] of old.entries()) {
      expect(await partsOf(id)).toBe(0);
      expect(await snapshots.loadFull(id)).toBeNull();
      expect(await snapshots.header(id)).toMatchObject({ version: 20 + i, grantedUntil: null });
    }
    // A day-old snapshot is kept whole.
    expect(await partsOf('gw-yesterday')).toBe(1);
    expect((await snapshots.loadFull('gw-yesterday'))?.proxies).toHaveLength(3);
  });

  it('one header whose transaction fails costs only itself: the others are swept, logged and counted', async () => {
    const clock = new ManualClock(T0);
    const old = ['gw-f-0', 'gw-f-1', 'gw-f-2'];
    for (const id of old) await storeHeader(id, 4, at(-9 * DAY), 2);
    // The second header's transaction fails as a contended one does (ABORTED, after the client's own
    // retries); every other call goes to the emulator.
    let transactions = 0;
    const flaky = new Proxy(db, {
      get(target, prop) {
        if (prop === 'runTransaction') {
          return (fn: Parameters<Firestore['runTransaction']>[0]) =>
            ++transactions === 2
              ? Promise.reject(Object.assign(new Error('contention'), { code: 10 }))
              : target.runTransaction(fn);
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const log = memoryLogger();
    const deps = {
      ...passDeps(clock, [], { workerIds: [], headerIds: [] }),
      snapshots: new FirestoreSnapshotStore(flaky),
      log,
    };
    const run = await handleSnapshotEvent(deps, tickEvent);
    // A tick taken up says so (the stopped-job alert counts these lines).
    expect(log.lines.filter((l) => l.event === 'job.tick')).toEqual([
      expect.objectContaining({ severity: 'INFO', job: 'snapshot-tick' }),
    ]);
    expect(run.summary).toMatchObject({ swept: 2, sweepFailures: 1 });
    expect(snapshotRunResult(run).counts).toMatchObject({ swept: 2, sweepFailures: 1 });
    const left: string[] = [];
    for (const id of old) if ((await partsOf(id)) > 0) left.push(id);
    expect(left).toHaveLength(1);
    const swept = old.filter((id) => id !== left[0]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ event: 'gateway.snapshots_swept', workers: swept }),
    );
    const failed = log.lines.filter((l) => l.workerId === left[0]);
    expect(failed).toEqual([
      expect.objectContaining({ severity: 'WARNING', workerId: left[0], kind: 'unavailable' }),
    ]);
    // The next tick sweeps the one left.
    expect(await sweepOldSnapshots(deps)).toEqual({ swept: 1, failures: 0 });
    expect(await partsOf(left[0]!)).toBe(0);
  });

  it('headers edited into nonsense do not hold the sweep up', async () => {
    const clock = new ManualClock(T0);
    for (let i = 0; i < 5; i++) {
      await db
        .collection('snapshots')
        .doc(`gw-bad-${i}`)
        .set({ grantedUntil: Timestamp.fromDate(at(-30 * DAY)), version: 'x' });
    }
    await storeHeader('gw-old', 8, at(-10 * DAY), 2);
    const deps = passDeps(clock, [], { workerIds: [], headerIds: [] });
    // The batch (5) is taken up by the bad ones once; the next tick reaches the real one.
    expect((await sweepOldSnapshots(deps)).swept).toBe(0);
    expect((await sweepOldSnapshots(deps)).swept).toBe(1);
    expect(await partsOf('gw-old')).toBe(0);
    expect((await db.collection('snapshots').doc('gw-bad-0').get()).data()).toEqual({
      grantedUntil: null,
      version: 'x',
    });
  });

  it('a pinned worker id that comes back after its parts were swept continues above its old version', async () => {
    const clock = new ManualClock(T0);
    await storeHeader('gw-pinned', 41, at(-10 * DAY), 2);
    const published: GatewaySnapshotMessage[] = [];
    const deps = passDeps(clock, published, { workerIds: [], headerIds: [] });
    expect((await sweepOldSnapshots(deps)).swept).toBe(1);
    expect(await snapshots.loadFull('gw-pinned')).toBeNull();

    // The same id registers again (GATEWAY_WORKER_ID): a new session, live now.
    await workers.put(record('gw-pinned', at(20)), null);
    await proxies.create(poolProxy('pp-1', 3));
    const summary = await runSnapshotPass(deps);
    expect(summary).toMatchObject({ published: 1, failures: 0 });
    expect(published.map((m) => [m.workerId, m.version])).toEqual([['gw-pinned', 42]]);
    const full = await snapshots.loadFull('gw-pinned');
    expect(full).toMatchObject({ version: 42 });
    expect(full?.proxies.map((p) => p.name)).toEqual(['pp-1']);
    expect(await snapshots.header('gw-pinned')).toMatchObject({ version: 42, grantedUntil: at(180) });
  });
});
