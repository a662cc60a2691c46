// The planner lock is taken for a short lifetime and extended while its pass runs
// (functions/snapshot/src/planner-lock.ts). A pass whose instance dies holding it must not keep the ticks
// after it busy until every gateway's snapshot is stale (150 s) and its grant ended (180 s): with one
// tick a minute and a lock of the function's timeout + 10 s, the two ticks after the death were both
// busy. And an extension that fails must stop the pass writing. Real Firestore adapters on the emulator,
// a manual clock, a recording publisher.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadSnapshotConfig } from '../../functions/snapshot/src/config.js';
import { handleSnapshotEvent } from '../../functions/snapshot/src/handler.js';
import { PlannerBusy, runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { pollUntil } from '../support/poll.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId('demo-lockbeat');
const db = new Firestore({ projectId });
const workers = new FirestoreWorkerStore(db);
const snapshots = new FirestoreSnapshotStore(db);
const ownership = new FirestoreOwnershipStore(db);
const proxies = new FirestoreProxyStore(db);
afterAll(() => db.terminate());

const T0 = new Date('2026-12-07T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const TICK = {
  data: { message: { data: Buffer.from(JSON.stringify({ job: 'snapshot-tick' })).toString('base64') } },
};

beforeEach(async () => {
  await clearProject(projectId);
});

describe('a snapshot pass that dies holding the planner lock', () => {
  it('holds the ticks off for a short while only: a live worker’s grant is renewed before it goes stale', async () => {
    await proxies.create(poolProxy('pz-1', 1));
    await workers.put(record('gw-a', at(600)), null);
    // As the deployed function is wired: the lock's lifetime and how long a pass may extend it.
    const { lockMs, lockHoldMs } = loadSnapshotConfig({ GOOGLE_CLOUD_PROJECT: projectId });
    const clock = new ManualClock(T0);
    const published: GatewaySnapshotMessage[] = [];
    const deps = {
      ...firestorePassDeps(db, clock, published),
      lockMs,
      lockHoldMs,
      newHolder: countingHolders(),
    };

    // The tick at T0 builds gw-a's snapshot: generated at T0, granted until T0+180 s.
    expect((await handleSnapshotEvent(deps, TICK)).outcome).toBe('done');
    const before = await snapshots.header('gw-a');
    expect(before).toMatchObject({ generatedAt: T0, grantedUntil: at(180) });

    // The tick at T0+60 s takes the lock, as pass.ts takes it, and its instance dies.
    expect(await ownership.acquireLock('dead', at(60), new Date(at(60).getTime() + lockMs))).not.toBeNull();

    // The ticks after it, a minute apart, until one renews gw-a's grant.
    let renewedAt: Date | null = null;
    for (const s of [120, 180, 240]) {
      clock.set(at(s));
      await handleSnapshotEvent(deps, TICK);
      const h = await snapshots.header('gw-a');
      if (h && h.version > before!.version) {
        renewedAt = at(s);
        break;
      }
    }
    // Before the worker's snapshot is stale (a gateway refuses new traffic past its max stale age) and
    // before the grant it holds ends (its tunnels are cut): with a 130 s lock, at T0+240 s only.
    expect(renewedAt).not.toBeNull();
    expect(renewedAt!.getTime()).toBeLessThan(T0.getTime() + deps.settings.maxStaleAgeSeconds * 1000);
    expect(renewedAt!.getTime()).toBeLessThan(before!.grantedUntil!.getTime());
  }, 60_000);
});

describe('a snapshot pass that runs past its lock’s lifetime', () => {
  it('keeps the lock: another pass finds the planner busy, and the lock is given back at the end', async () => {
    await proxies.create(poolProxy('pz-1', 1));
    await workers.put(record('gw-a', at(300)), null);
    const clock = new ManualClock(T0);
    const published: GatewaySnapshotMessage[] = [];
    // A lifetime of 300 ms: the heartbeat beats every 100 ms (real time).
    const deps = { ...firestorePassDeps(db, clock, published, 'pass-a'), lockMs: 300, lockHoldMs: 10_000 };
    const publish = deps.publisher.publish.bind(deps.publisher);
    let busy: unknown;
    deps.publisher = {
      publish: async (m) => {
        // A's publish takes a second, and the next pass comes meanwhile — once a beat on the moved clock has
        // landed (a fixed 400 ms wait for it lost to a loaded emulator: pass-b took the lapsed lock).
        clock.set(at(1));
        await pollUntil(
          () => ownership.read(),
          (st) => st.lock?.holder === 'pass-a' && st.lock.until.getTime() > at(1).getTime(),
          10_000,
          'a heartbeat extending the lock on the moved clock',
        );
        busy = await runSnapshotPass(firestorePassDeps(db, clock, [], 'pass-b')).catch((err) => err);
        return publish(m);
      },
    };

    expect(await runSnapshotPass(deps)).toMatchObject({ ran: true, published: 1, failures: 0 });
    expect(busy).toBeInstanceOf(PlannerBusy);
    expect(published.map((m) => m.workerId)).toEqual(['gw-a']);
    // Released on the version its last extension left, not the one it took the lock at.
    expect((await ownership.read()).lock).toBeNull();
  }, 60_000);
});

describe('a snapshot pass whose lock cannot be extended', () => {
  it('starts no step after that: those left are failed, to be asked for again', async () => {
    // Nine workers: eight steps run at once (ACT_CONCURRENCY), the ninth waits for one of them.
    const fleet = Array.from({ length: 9 }, (_, i) => `gw-${i + 1}`);
    await proxies.create(poolProxy('pz-1', 1));
    await Promise.all(fleet.map((w) => workers.put(record(w, at(300)), null)));
    const published: GatewaySnapshotMessage[] = [];
    const log = memoryLogger();
    // A lifetime of 300 ms: the heartbeat beats every 100 ms (real time), and its extension is refused.
    const deps = { ...firestorePassDeps(db, new ManualClock(T0), published, 'pass-a'), log };
    deps.lockMs = 300;
    deps.lockHoldMs = 10_000;
    deps.ownership = Object.assign(Object.create(deps.ownership) as typeof deps.ownership, {
      extendLock: async () => null,
    });
    const publish = deps.publisher.publish.bind(deps.publisher);
    deps.publisher = {
      publish: async (m) => {
        // Held until the lock is given up as lost (5 s at most: without a heartbeat it never is).
        await vi
          .waitFor(
            () =>
              expect(log.lines).toContainEqual(
                expect.objectContaining({ event: 'gateway.planner_lock_lost' }),
              ),
            { timeout: 5_000, interval: 50 },
          )
          .catch(() => {});
        return publish(m);
      },
    };

    const summary = await runSnapshotPass(deps);

    expect(summary).toMatchObject({ ran: true, published: 8, failures: 1 });
    expect(summary.failed).toEqual([{ workerId: expect.any(String), permanent: false }]);
    expect(published).toHaveLength(8);
    expect(await snapshots.header(summary.failed[0]!.workerId)).toBeNull();
  }, 60_000);
});
