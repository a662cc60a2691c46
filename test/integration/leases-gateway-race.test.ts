// A lease grant racing the snapshot planner's assignment of the same unowned gateway-pool proxy (contract
// §4 step 4: only a proxy without an owner may be extracted, and a leased proxy is not handed to a worker).
// Each side reads the other's state at a different time — the planner the proxy's lease state, the lease
// service its listener view of ownership — so a spec flip into the pool landing between the two used to
// let both through: a worker routing crawler traffic over a proxy an exclusive lease holder believes is
// theirs. Both now commit on leaseState/{proxy} under a precondition (domain/workers/leasable.ts
// gatewayClaimSettled): whichever lands second sees the first. Real adapters on the Firestore emulator;
// the interleavings are forced by running the steps in order (and, for the pass, by a hook after its read).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotPassDeps } from '../../functions/snapshot/src/deps.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { FirestoreLeaseStore } from '../../shared/src/adapters/firestore/lease-store.js';
import { FirestoreOwnershipGate } from '../../shared/src/adapters/firestore/ownership-gate.js';
import { FirestoreLeaseActivity } from '../../shared/src/adapters/firestore/ownership-lease-activity.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { OwnershipChange } from '../../shared/src/domain/workers/ownership.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { NewLease } from '../../shared/src/ports/lease-store.js';
import { WorkerStoreError } from '../../shared/src/ports/workers.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { storeClocks } from '../support/lease-store-clocks.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { eventually, poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const ownership = new FirestoreOwnershipStore(db);
const activity = new FirestoreLeaseActivity(db);
const T0 = new Date('2026-11-30T12:00:00Z');
/** The proxy instance the leases here are granted on. */
const UID = '00000000-0000-4000-8000-000000000000';
/** The proxies the planner asks about, as the instance the leases here are granted on. */
const instances = (...names: string[]) => names.map((name) => ({ name, uid: UID }));
let clock: ManualClock;
const stores: FirestoreLeaseStore[] = [];
const gates: FirestoreOwnershipGate[] = [];
let seq = 0;

function leaseStore(): FirestoreLeaseStore {
  const s = new FirestoreLeaseStore(db, {
    ...storeClocks(clock),
    settings: { cooldownWindowMs: 60_000 },
    log: memoryLogger(),
  }).start();
  stores.push(s);
  return s;
}
async function readyGate(): Promise<FirestoreOwnershipGate> {
  const g = new FirestoreOwnershipGate(db, clock, { log: memoryLogger() }).start();
  gates.push(g);
  await g.ready(10_000);
  return g;
}
const newLease = (exclusive = true): NewLease => ({
  id: `lease-race-${++seq}`,
  target: null,
  exclusive,
  holder: 'crawler',
  ttlSeconds: 60,
});
const assign = (proxy: string, owner: string, since: number): OwnershipChange => ({
  proxy,
  kind: 'assigned',
  next: { proxy, owner, since, drainEpoch: null },
});
const release = (proxy: string): OwnershipChange => ({ proxy, kind: 'released', next: null });

/** The planner's commit as the snapshot pass makes it: under the lock, with the lease versions it read. */
async function plannerCommit(
  changes: OwnershipChange[],
  leaseVersions: Map<string, string | null> = new Map(),
): Promise<number> {
  const token = await ownership.acquireLock('test-planner', clock.now(), new Date(T0.getTime() + 600_000));
  if (!token) throw new Error('planner lock not taken');
  const epoch = (await ownership.epoch()) + 1;
  try {
    await ownership.releaseLock(
      'test-planner',
      await ownership.commit(changes, epoch, token, clock.now(), leaseVersions),
    );
  } catch (err) {
    await ownership.releaseLock('test-planner', token);
    throw err;
  }
  return epoch;
}

/** The snapshot pass on the real Firestore adapters; only the Pub/Sub publisher is a stand-in. */
function passDeps(passClock: ManualClock, log: ReturnType<typeof memoryLogger>): SnapshotPassDeps {
  return { ...firestorePassDeps(db, passClock, []), log, lockMs: 60_000, newHolder: countingHolders() };
}

beforeEach(async () => {
  await clearProject(projectId);
  clock = new ManualClock(T0);
});
afterEach(async () => {
  for (const g of gates.splice(0)) g.stop();
  await Promise.all(stores.splice(0).map((s) => s.stop()));
});
afterAll(() => db.terminate());

describe('a lease grant racing the planner for the same pool proxy', () => {
  it('grant first: the planner’s assignment, read before the grant, fails its precondition', async () => {
    const leases = leaseStore();
    await leases.ready(10_000);
    // The planner reads the proxy's lease state (none yet) for the assignment it is about to make …
    const read = await activity.leased(instances('px-a', 'px-b'), clock.now());
    expect(read.leased.size).toBe(0);
    // … a crawler's exclusive lease lands meanwhile (the lease service's view still had it outside the pool) …
    const granted = await leases.grant({
      candidates: [{ name: 'px-a', capacity: 2, uid: UID }],
      lease: newLease(),
    });
    expect(granted.kind).toBe('granted');
    // … and the planner's commit, preconditioned on what it read, is refused whole: nothing changes.
    const err = await plannerCommit(
      [assign('px-a', 'gw-1', 1), assign('px-b', 'gw-1', 1)],
      read.versions,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkerStoreError);
    expect((err as WorkerStoreError).kind).toBe('conflict');
    const state = await ownership.read();
    expect(state.records.size).toBe(0);
    expect(state.epoch).toBe(0);
    // Read again, the planner sees the lease and keeps px-a back; px-b is assigned and claimed.
    const again = await activity.leased(instances('px-a', 'px-b'), clock.now());
    expect([...again.leased]).toEqual(['px-a']);
    await plannerCommit([assign('px-b', 'gw-1', 1)], again.versions);
    expect([...(await ownership.read()).records.keys()]).toEqual(['px-b']);
    const claimed = await db.collection(LEASE_COLLECTIONS.leaseState).doc('px-b').get();
    expect(claimed.get('gatewayClaim')).toMatchObject({ epoch: 1, owner: 'gw-1' });
    expect(claimed.get('entries')).toEqual([]);
  });

  it('assignment first: a grant from a view that has not caught up finds the claim and refuses', async () => {
    const leases = leaseStore();
    await leases.ready(10_000);
    // px-c was leased and released before: this replica knows its lease state at that version.
    const first = await leases.grant({
      candidates: [{ name: 'px-c', capacity: 2, uid: UID }],
      lease: newLease(false),
    });
    if (first.kind !== 'granted') throw new Error('setup lease not granted');
    await leases.release(first.lease.id);
    // The lease service's ownership view, frozen before the assignment (a listener's delivery delay).
    const trailing = await readyGate();
    trailing.stop();
    const read = await activity.leased(instances('px-c', 'px-d'), clock.now());
    const epoch = await plannerCommit([assign('px-c', 'gw-1', 1), assign('px-d', 'gw-1', 1)], read.versions);
    // The view still says "unowned", and the replica's cached lease state predates the claim: the grant's
    // commit fails its precondition, it reads the state again and finds the claim its view cannot settle.
    expect(trailing.isOwned('px-c')).toBe(false);
    expect(trailing.claimSettled('px-c', epoch)).toBe(false);
    const settled = (p: string, e: number) => trailing.claimSettled(p, e);
    for (const name of ['px-c', 'px-d']) {
      const outcome = await leases.grant({
        candidates: [{ name, capacity: 2, uid: UID }],
        lease: newLease(),
        claimSettled: settled,
      });
      expect(outcome, name).toEqual({ kind: 'no_room', atCapacity: 0, inGateway: 1 });
    }
    // A second replica that never saw either state reads the claim first and refuses without a commit.
    const other = leaseStore();
    await other.ready(10_000);
    expect(
      await other.grant({
        candidates: [{ name: 'px-d', capacity: 2, uid: UID }],
        lease: newLease(),
        claimSettled: settled,
      }),
    ).toEqual({ kind: 'no_room', atCapacity: 0, inGateway: 1 });
    const stored = await db.collection(LEASE_COLLECTIONS.leases).where('proxy', 'in', ['px-c', 'px-d']).get();
    expect(stored.docs.map((d) => d.get('leaseId'))).toEqual([first.lease.id]);
  });

  it('a claim holds only until the view has caught up: once released, the proxy is leasable again', async () => {
    const leases = leaseStore();
    await leases.ready(10_000);
    const read = await activity.leased(instances('px-e'), clock.now());
    const claimEpoch = await plannerCommit([assign('px-e', 'gw-1', 1)], read.versions);
    const live = await readyGate();
    await eventually(async () => live.isOwned('px-e'), 10_000, 'the view to see px-e owned');
    expect(live.claimSettled('px-e', claimEpoch)).toBe(false);
    // The drain finished; the planner clears the ownership (no claim written for a release).
    await plannerCommit([release('px-e')]);
    await eventually(
      async () => live.claimSettled('px-e', claimEpoch),
      10_000,
      'the view to settle the claim',
    );
    const outcome = await leases.grant({
      candidates: [{ name: 'px-e', capacity: 2, uid: UID }],
      lease: newLease(),
      claimSettled: (p, e) => live.claimSettled(p, e),
    });
    expect(outcome.kind).toBe('granted');
    // The grant removed the settled claim in its own write.
    const doc = await db.collection(LEASE_COLLECTIONS.leaseState).doc('px-e').get();
    expect(doc.get('gatewayClaim')).toBeUndefined();
    expect(doc.get('activeLeases')).toBe(1);
  });

  it('a settled claim goes with the next grant, even from a view that has stopped following', async () => {
    const leases = leaseStore();
    await leases.ready(10_000);
    // Once in the pool: assigned (claim), drained and released; then taken out of the pool.
    const read = await activity.leased(instances('px-f'), clock.now());
    const claimEpoch = await plannerCommit([assign('px-f', 'gw-1', 1)], read.versions);
    await plannerCommit([release('px-f')]);
    const gate = await readyGate();
    await eventually(async () => gate.claimSettled('px-f', claimEpoch), 10_000, 'the view to settle it');
    // The view stops following (a listener re-subscribing): a later assignment would have written a newer
    // claim that the grant reads or fails its precondition on, so this one still counts as settled.
    gate.stop();
    const g = await leases.grant({
      candidates: [{ name: 'px-f', capacity: 2, uid: UID }],
      lease: newLease(false),
      claimSettled: (p, e) => gate.claimSettled(p, e),
    });
    expect(g.kind).toBe('granted');
    const doc = await db.collection(LEASE_COLLECTIONS.leaseState).doc('px-f').get();
    expect(doc.get('gatewayClaim')).toBeUndefined();
    expect(doc.get('activeLeases')).toBe(1);
    // Without a claim no view is asked any more: a grant with the fail-closed default goes through.
    const next = await leases.grant({
      candidates: [{ name: 'px-f', capacity: 2, uid: UID }],
      lease: newLease(false),
    });
    expect(next.kind).toBe('granted');
  });

  it('claims are written for assignments only: a cancelled drain or a hand-over from a lapsed owner writes none', async () => {
    const record = (proxy: string, owner: string, since: number, drainEpoch: number | null) => ({
      proxy,
      owner,
      since,
      drainEpoch,
    });
    await plannerCommit([assign('px-g', 'gw-1', 1), assign('px-h', 'gw-1', 1)]);
    await plannerCommit([
      { proxy: 'px-g', kind: 'drain_started', next: record('px-g', 'gw-1', 1, 2) },
      { proxy: 'px-h', kind: 'drain_started', next: record('px-h', 'gw-1', 1, 2) },
    ]);
    const read = await activity.leased(instances('px-g', 'px-h'), clock.now());
    await plannerCommit(
      [
        { proxy: 'px-g', kind: 'drain_cancelled', next: record('px-g', 'gw-1', 1, null) },
        { proxy: 'px-h', kind: 'released', next: record('px-h', 'gw-2', 3, null) },
      ],
      read.versions,
    );
    const docs = await db.getAll(
      db.collection(LEASE_COLLECTIONS.leaseState).doc('px-g'),
      db.collection(LEASE_COLLECTIONS.leaseState).doc('px-h'),
    );
    expect(docs.map((d) => d.exists)).toEqual([false, false]);
  });

  it('candidates claimed behind this replica’s cache cost the grant no budget: the free one further down is granted', async () => {
    const leases = leaseStore();
    await leases.ready(10_000);
    const names = Array.from({ length: 16 }, (_, i) => `flip-${String(i).padStart(2, '0')}`);
    // Leased and released before (this replica knows their states), then flipped into the pool at once.
    for (const name of names) {
      const g = await leases.grant({ candidates: [{ name, capacity: 2, uid: UID }], lease: newLease(false) });
      if (g.kind !== 'granted') throw new Error('setup lease not granted');
      await leases.release(g.lease.id);
    }
    const read = await activity.leased(instances(...names), clock.now());
    await plannerCommit(
      names.map((n) => assign(n, 'gw-1', 1)),
      read.versions,
    );
    const trailing = await readyGate();
    trailing.stop();
    // Selected from a view that still had them outside the pool: idle, so ranked first; 16 is the
    // store's default commit budget per request.
    const outcome = await leases.grant({
      candidates: [
        ...names.map((name) => ({ name, capacity: 2, uid: UID })),
        { name: 'free', capacity: 2, uid: UID },
      ],
      lease: newLease(),
      claimSettled: (p, e) => trailing.claimSettled(p, e),
    });
    expect(outcome).toMatchObject({ kind: 'granted', lease: { proxy: 'free' } });
  }, 30_000);

  it('a pass counts a lease as active for one clock skew past its expiry (the API may still renew it)', async () => {
    const proxies = new FirestoreProxyStore(db);
    const skew = poolProxy('pr-skew', 3);
    await proxies.create(skew);
    const leases = leaseStore();
    await leases.ready(10_000);
    const g = await leases.grant({
      candidates: [{ name: 'pr-skew', capacity: 4, uid: skew.uid }],
      lease: newLease(),
    });
    if (g.kind !== 'granted') throw new Error('setup lease not granted');
    // The snapshot function's clock is 1 s past the lease's expiry: within the skew allowed (5 s).
    const passClock = new ManualClock(new Date(g.lease.expiresAt.getTime() + 1_000));
    await new FirestoreWorkerStore(db).put(
      record('gw-1', new Date(passClock.now().getTime() + 60_000)),
      null,
    );
    const deps = passDeps(passClock, memoryLogger());
    await runSnapshotPass(deps);
    expect((await ownership.read()).records.has('pr-skew')).toBe(false);
    // Past the skew the proxy is the pool's.
    passClock.advance(DEFAULT_WORKER_SETTINGS.skewMs);
    await runSnapshotPass(deps);
    expect((await ownership.read()).records.get('pr-skew')?.owner).toBe('gw-1');
  });

  it('a snapshot pass whose assignment loses to a grant plans again at once and leaves the leased proxy out', async () => {
    const proxies = new FirestoreProxyStore(db);
    await new FirestoreWorkerStore(db).put(record('gw-1', new Date(T0.getTime() + 20_000)), null);
    const leased = poolProxy('pr-leased', 1);
    await proxies.create(leased);
    await proxies.create(poolProxy('pr-free', 2));
    const leases = leaseStore();
    await leases.ready(10_000);
    let reads = 0;
    let leaseId: string | null = null;
    const log = memoryLogger();
    const deps = passDeps(clock, log);
    const real = deps.leases;
    // The pass reads lease states twice before it commits (a dry plan, then again under the lock): the
    // crawler's grant lands right after the second read, between the planner's read and its commit.
    deps.leases = {
      leased: async (names, now) => {
        const r = await real.leased(names, now);
        if (++reads === 2) {
          const g = await leases.grant({
            candidates: [{ name: 'pr-leased', capacity: 4, uid: leased.uid }],
            lease: newLease(),
          });
          if (g.kind !== 'granted') throw new Error('the racing grant was not granted');
          leaseId = g.lease.id;
        }
        return r;
      },
    };
    const summary = await runSnapshotPass(deps);
    expect(leaseId).not.toBeNull();
    expect(reads).toBe(3);
    expect(summary).toMatchObject({ ran: true, ownershipChanges: 1, failures: 0 });
    const records = (await ownership.read()).records;
    expect([...records.keys()]).toEqual(['pr-free']);
    expect(log.lines.some((l) => l.event === 'gateway.ownership_replanned')).toBe(true);
    // The lease stands, and the planner's read still sees it: the proxy stays out of the pool's workers.
    expect([...(await activity.leased([leased], clock.now())).leased]).toEqual(['pr-leased']);
  });
});
