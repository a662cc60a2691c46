// An ownership commit split into chunks moves the epoch with its last chunk only (pass.ts): the earlier
// ones write records at the new epoch E under a state still at E − 1. When what was left for the last
// chunk is gone by the re-plan — its one proxy leased meanwhile — or the pass is cut off between chunks
// and nothing is left to plan, the epoch must still move to E: otherwise the snapshots go out at E − 1
// while their records say E, so every report (at E − 1) fails the records' epoch (zero usable capacity
// for each proxy of the first chunk), a drain started in it can never be seen drained, and its claims
// never settle — until some unrelated change of ownership moves the epoch. Real Firestore adapters on the
// emulator; a manual clock.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotPassDeps } from '../../functions/snapshot/src/deps.js';
import { MAX_ASSIGNMENTS_PER_COMMIT, runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { GatewaySnapshot, GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { countingHolders, firestorePassDeps, poolFleet } from '../support/snapshot-pass-deps.js';

const projectId = testProjectId('demo-heldepoch');
const db = new Firestore({ projectId });
afterAll(() => db.terminate());

const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
// One more than a commit assigns: the last commit holds a single assignment.
const POOL = MAX_ASSIGNMENTS_PER_COMMIT + 1;

beforeEach(async () => {
  await clearProject(projectId);
});

const fleet = () => poolFleet(db, POOL, at(30));

const leaseRaced = (proxy: string) =>
  // A lease service writes the proxy's lease state after the pass read it (unreadable: counts as leased).
  db.collection(LEASE_COLLECTIONS.leaseState).doc(proxy).set({ unreadable: true });

function passDeps(clock: ManualClock, published: GatewaySnapshotMessage[]): SnapshotPassDeps {
  return { ...firestorePassDeps(db, clock, published), newHolder: countingHolders(), log: memoryLogger() };
}

async function expectOneEpoch(published: GatewaySnapshotMessage[]): Promise<void> {
  const state = await new FirestoreOwnershipStore(db).read();
  expect(state.records.size).toBe(POOL - 1);
  // The records, the state and the snapshot all name the same epoch.
  expect(new Set([...state.records.values()].map((r) => r.since))).toEqual(new Set([state.epoch]));
  const full = published.at(-1) as GatewaySnapshot;
  expect(full.proxies).toHaveLength(POOL - 1);
  expect(full.ownershipEpoch).toBe(state.epoch);
  expect(state.epoch).toBe(1);
}

describe('a chunked ownership commit whose last chunk comes to nothing', () => {
  it('a lease takes the last chunk’s only proxy: the re-plan still moves the epoch', async () => {
    await fleet();
    const published: GatewaySnapshotMessage[] = [];
    const deps = passDeps(new ManualClock(T0), published);
    const real = deps.ownership;
    let calls = 0;
    deps.ownership = Object.assign(Object.create(real) as typeof real, {
      commit: async (...args: Parameters<typeof real.commit>) => {
        if (++calls === 2) await leaseRaced(args[0].find((c) => c.kind === 'assigned')!.proxy);
        return real.commit(...args);
      },
    });
    const summary = await runSnapshotPass(deps);
    expect(summary).toMatchObject({ ran: true, failures: 0, ownershipChanges: POOL - 1, published: 1 });
    await expectOneEpoch(published);
  }, 120_000);

  it('a pass cut off between its commits: the next one moves the epoch though nothing is left to plan', async () => {
    await fleet();
    const published: GatewaySnapshotMessage[] = [];
    const clock = new ManualClock(T0);
    const crashing = passDeps(clock, published);
    const real = crashing.ownership;
    let calls = 0;
    let last: string | null = null;
    crashing.ownership = Object.assign(Object.create(real) as typeof real, {
      commit: async (...args: Parameters<typeof real.commit>) => {
        if (++calls === 2) {
          last = args[0].find((c) => c.kind === 'assigned')!.proxy;
          throw new Error('the instance went away');
        }
        return real.commit(...args);
      },
    });
    await expect(runSnapshotPass(crashing)).rejects.toThrow('the instance went away');
    expect(published).toEqual([]);
    // Meanwhile the proxy the lost commit would have assigned is leased: nothing is left to plan.
    await leaseRaced(last!);
    clock.set(at(5));
    const summary = await runSnapshotPass(passDeps(clock, published));
    expect(summary).toMatchObject({ ran: true, failures: 0, published: 1 });
    await expectOneEpoch(published);
  }, 120_000);
});
