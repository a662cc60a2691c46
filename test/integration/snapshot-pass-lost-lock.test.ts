// A snapshot pass that outlives its planner lock (a pass stalled past the function's timeout — on Cloud
// Run a timed-out request's code may run on later) must not store or publish what it decided under that
// lock: the next pass has taken the lock meanwhile and decided on the grants it read, so a grant the stale
// pass records afterwards would hand a worker a proxy the next pass already gave to another — two owners
// (contract §4). Real Firestore adapters on the emulator, manual clocks, a recording publisher.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { PublishError } from '../../shared/src/ports/publish-error.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record, storeSnapshot } from '../support/worker-records.js';

const projectId = testProjectId('demo-lostlock');
const db = new Firestore({ projectId });
const workers = new FirestoreWorkerStore(db);
const snapshots = new FirestoreSnapshotStore(db);
const ownership = new FirestoreOwnershipStore(db);
const proxies = new FirestoreProxyStore(db);
afterAll(() => db.terminate());

const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

beforeEach(async () => {
  await clearProject(projectId);
});

/** gw-x owns pz-1 at epoch 1, its session live until `liveUntil`; its grant (T0+20 s) is due for renewal. */
async function ownedByX(liveUntil: Date) {
  await proxies.create(poolProxy('pz-1', 1));
  await workers.put(record('gw-x', liveUntil), null);
  await storeSnapshot(snapshots, 'gw-x', 1, at(20));
  const setup = await ownership.acquireLock('setup', T0, at(60));
  await ownership.releaseLock(
    'setup',
    await ownership.commit(
      [
        {
          proxy: 'pz-1',
          kind: 'assigned',
          next: { proxy: 'pz-1', owner: 'gw-x', since: 1, drainEpoch: null },
        },
      ],
      1,
      setup!,
      T0,
    ),
  );
}

/** A gate a test holds a pass at: `reached` once the pass is there, which waits until `open()`. */
function gate() {
  let reached!: () => void;
  let open!: () => void;
  const at = new Promise<void>((r) => {
    reached = r;
  });
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return {
    reached: at,
    open,
    pass: async () => {
      reached();
      await opened;
    },
  };
}

describe('a pass that lost its planner lock', () => {
  it('does not mark a later pass’s snapshot sent: one whose publish failed is re-sent at once', async () => {
    // The next pass sees an unsent snapshot as one to re-send now; marked sent it would wait for
    // resendAfterMs (30 s) after the stale pass's publish, with the worker's session (30 s) running out.
    await ownedByX(at(300));

    // Pass A at T0 saves version 2 (the renewed grant) and stalls in its publish (up to 10 s deployed).
    const clockA = new ManualClock(T0);
    const publishedA: GatewaySnapshotMessage[] = [];
    const depsA = { ...firestorePassDeps(db, clockA, publishedA, 'pass-a'), log: memoryLogger() };
    const stall = gate();
    depsA.publisher = {
      publish: async (m) => {
        await stall.pass();
        publishedA.push(m);
        return 'a';
      },
    };
    const passA = runSnapshotPass(depsA);
    await stall.reached;
    expect(await snapshots.header('gw-x')).toMatchObject({ version: 2, sentAt: null });

    // 140 s later A's lock (130 s) has lapsed: pass B renews the grant again (version 3), and its publish fails.
    const depsB = firestorePassDeps(db, new ManualClock(at(140)), [], 'pass-b');
    depsB.publisher = {
      publish: async () => {
        throw new PublishError('unavailable', 'Pub/Sub refused it');
      },
    };
    expect(await runSnapshotPass(depsB)).toMatchObject({ ran: true, failures: 1 });

    // A's publish returns now. Its snapshot went out; the header is B's version 3, which did not.
    clockA.set(at(141));
    stall.open();
    const summaryA = await passA;
    expect(summaryA.workers.find((w) => w.workerId === 'gw-x')).toMatchObject({
      kind: 'publish',
      version: 2,
    });
    expect(publishedA.map((m) => m.version)).toEqual([2]);
    expect(await snapshots.header('gw-x')).toMatchObject({ version: 3, sentAt: null });
    expect(depsA.log.lines).toContainEqual(
      expect.objectContaining({ event: 'gateway.snapshot_race_lost', workerId: 'gw-x', version: 2 }),
    );

    // So the next pass, 4 s on, sends version 3 instead of waiting until T0+171 s.
    const publishedC: GatewaySnapshotMessage[] = [];
    const summaryC = await runSnapshotPass(
      firestorePassDeps(db, new ManualClock(at(145)), publishedC, 'pass-c'),
    );
    expect(summaryC).toMatchObject({ resent: 1, failures: 0 });
    expect(publishedC.map((m) => [m.workerId, m.version])).toEqual([['gw-x', 3]]);
  }, 60_000);

  it('stores and publishes nothing: the grant the next pass decided on stays the one recorded', async () => {
    // gw-x owns pz-1; its grant (T0+20 s) is due for renewal, its session live until T0+30 s.
    await ownedByX(at(30));

    // Pass A at T0 renews gw-x's grant to T0+180 s with pz-1 in its snapshot — and stalls right before
    // storing it.
    const publishedA: GatewaySnapshotMessage[] = [];
    const depsA = firestorePassDeps(db, new ManualClock(T0), publishedA, 'pass-a');
    let stalled!: () => void;
    const reachedSave = new Promise<void>((r) => {
      stalled = r;
    });
    let resume!: () => void;
    const resumed = new Promise<void>((r) => {
      resume = r;
    });
    const realSave = depsA.snapshots.save.bind(depsA.snapshots);
    depsA.snapshots = Object.assign(Object.create(depsA.snapshots) as typeof depsA.snapshots, {
      save: async (...args: Parameters<typeof realSave>) => {
        stalled();
        await resumed;
        return realSave(...args);
      },
    });
    const passA = runSnapshotPass(depsA);
    await reachedSave;

    // 140 s later: A's lock (130 s) has lapsed; gw-x stopped reporting (session lapsed at T0+30 s) and its
    // recorded grant (T0+20 s) has lapsed too; gw-w is live. Pass B takes the lock and moves pz-1 to gw-w.
    await workers.put(record('gw-w', at(200)), null);
    const publishedB: GatewaySnapshotMessage[] = [];
    const summaryB = await runSnapshotPass(
      firestorePassDeps(db, new ManualClock(at(140)), publishedB, 'pass-b'),
    );
    expect(summaryB).toMatchObject({ ran: true, failures: 0 });
    expect((await ownership.read()).records.get('pz-1')).toMatchObject({ owner: 'gw-w', drainEpoch: null });
    expect(publishedB.find((m) => m.workerId === 'gw-w')).toMatchObject({ kind: 'full' });
    expect(
      (publishedB.find((m) => m.workerId === 'gw-w') as { proxies: { name: string }[] }).proxies,
    ).toEqual([expect.objectContaining({ name: 'pz-1' })]);

    // A wakes up. Storing its snapshot would record gw-x's grant until T0+180 s and send gw-x pz-1 usable
    // until T0+170 s — while gw-w owns it since T0+140 s.
    resume();
    const summaryA = await passA;
    expect(summaryA.workers.find((w) => w.workerId === 'gw-x')?.kind).toBe('lost_race');
    expect(publishedA).toEqual([]);
    const header = await snapshots.header('gw-x');
    expect(header).toMatchObject({ version: 1, grantedUntil: at(20) });
  }, 60_000);
});
