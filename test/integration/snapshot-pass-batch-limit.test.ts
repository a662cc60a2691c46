// The ownership commit of a snapshot pass claims every proxy it assigns on its lease state, in one batch
// with the shards and the epoch. Production Firestore refuses a batch of more than 500 writes (the
// emulator does not), so a pass assigning a large pool at once — the first gateway worker to register,
// or a fleet flipped into the gateway pool — would fail at its commit on every retry and every tick: no
// worker would get a snapshot again, and the live ones would go stale once their grants ran out. Real
// Firestore adapters on the emulator behind a client that enforces the limit; a manual clock.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotPassDeps } from '../../functions/snapshot/src/deps.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { FirestoreOwnershipGate } from '../../shared/src/adapters/firestore/ownership-gate.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { GatewaySnapshot, GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps, poolFleet } from '../support/snapshot-pass-deps.js';
import { eventually } from '../support/worker-client.js';
import { MAX_WRITES_PER_COMMIT, writeLimitedFirestore } from '../support/write-limited-firestore.js';

const projectId = testProjectId('demo-batchlimit');
const db = new Firestore({ projectId });
afterAll(() => db.terminate());

const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const POOL = 1_100;

beforeEach(async () => {
  await clearProject(projectId);
});

const fleet = () => poolFleet(db, POOL, at(30));

function passDeps(
  commits: number[],
  published: GatewaySnapshotMessage[],
  log: ReturnType<typeof memoryLogger>,
): SnapshotPassDeps {
  return {
    ...firestorePassDeps(writeLimitedFirestore(db, commits), new ManualClock(T0), published, 'pass-a'),
    log,
  };
}

describe('a pass that assigns more proxies than one commit may write', () => {
  it('commits them in batches Firestore accepts, and the worker gets them all in one pass', async () => {
    await fleet();
    const commits: number[] = [];
    const published: GatewaySnapshotMessage[] = [];
    const summary = await runSnapshotPass(passDeps(commits, published, memoryLogger()));
    expect(summary).toMatchObject({ ran: true, failures: 0, ownershipChanges: POOL, published: 1 });
    expect(commits.length).toBeGreaterThan(1);
    expect(Math.max(...commits)).toBeLessThanOrEqual(MAX_WRITES_PER_COMMIT);

    const { records, lock } = await new FirestoreOwnershipStore(db).read();
    expect(records.size).toBe(POOL);
    expect([...records.values()].every((r) => r.owner === 'gw-a' && r.drainEpoch === null)).toBe(true);
    expect(lock).toBeNull();
    const full = published.find((m) => m.workerId === 'gw-a') as GatewaySnapshot;
    expect(full.kind).toBe('full');
    expect(full.proxies).toHaveLength(POOL);
    // Every record of the pass carries the epoch its snapshot was built at.
    expect(new Set([...records.values()].map((r) => r.since))).toEqual(new Set([full.ownershipEpoch]));
  }, 120_000);

  it('a lease granted on a proxy of a later commit: what was committed stays, the rest is planned again', async () => {
    await fleet();
    const commits: number[] = [];
    const published: GatewaySnapshotMessage[] = [];
    const log = memoryLogger();
    const deps = passDeps(commits, published, log);
    const real = deps.ownership;
    let calls = 0;
    let raced: string | null = null;
    deps.ownership = Object.assign(Object.create(real) as typeof real, {
      commit: async (...args: Parameters<typeof real.commit>) => {
        if (++calls === 2) {
          // A lease service writes the state of a proxy this commit assigns, after the pass read it.
          raced = args[0].find((c) => c.kind === 'assigned')!.proxy;
          await db.collection(LEASE_COLLECTIONS.leaseState).doc(raced).set({ unreadable: true });
        }
        return real.commit(...args);
      },
    });

    const summary = await runSnapshotPass(deps);
    // The proxies of the first commit, and the rest but the leased one after the re-plan.
    expect(summary).toMatchObject({ ran: true, failures: 0, ownershipChanges: POOL - 1, published: 1 });
    expect(log.lines).toContainEqual(expect.objectContaining({ event: 'gateway.ownership_replanned' }));
    expect(Math.max(...commits)).toBeLessThanOrEqual(MAX_WRITES_PER_COMMIT);
    const { records } = await new FirestoreOwnershipStore(db).read();
    expect(raced).not.toBeNull();
    expect(records.has(raced!)).toBe(false); // an unreadable lease state counts as leased: kept back
    expect(records.size).toBe(POOL - 1);
    const full = published.find((m) => m.workerId === 'gw-a') as GatewaySnapshot;
    expect(full.proxies).toHaveLength(POOL - 1);
    expect(full.ownershipEpoch).toBe((await new FirestoreOwnershipStore(db).read()).epoch);
  }, 120_000);
  // The lease service settles a planner's claim at epoch E once its ownership view has seen epoch E and no
  // owner (domain/workers/leasable.ts gatewayClaimSettled): sound only if a view that shows epoch E shows
  // every assignment made at E. With the epoch moved by the first of several commits, a view between two
  // of them shows epoch E while the later commit's proxies are not owned yet — a grant reading the claim
  // of such a proxy (written with its assignment) would take it as settled and lease a proxy a worker owns.
  it('moves the epoch only with its last commit, so a view at the new epoch shows every assignment', async () => {
    await fleet();
    const gate = new FirestoreOwnershipGate(db, new ManualClock(T0), { log: memoryLogger() }).start();
    try {
      await gate.ready(10_000);
      const deps = passDeps([], [], memoryLogger());
      const real = deps.ownership;
      let calls = 0;
      const between: Array<{ epoch: number; settled: boolean }> = [];
      deps.ownership = Object.assign(Object.create(real) as typeof real, {
        commit: async (...args: Parameters<typeof real.commit>) => {
          if (++calls === 2) {
            const [chunk, epoch] = args;
            const first = (await new FirestoreOwnershipStore(db).read()).records;
            await eventually(() => [...first.keys()].every((p) => gate.isOwned(p)), 10_000, 'view');
            // A proxy this next commit assigns (and claims at `epoch`), not owned in any view yet.
            const next = chunk.find((c) => c.kind === 'assigned')!.proxy;
            between.push({ epoch: (await real.epoch()) as number, settled: gate.claimSettled(next, epoch) });
          }
          return real.commit(...args);
        },
      });
      expect(await runSnapshotPass(deps)).toMatchObject({ ran: true, failures: 0, ownershipChanges: POOL });
      expect(between).toEqual([{ epoch: 0, settled: false }]);
      expect(await real.epoch()).toBe(1);
    } finally {
      gate.stop();
    }
  }, 120_000);
});
