// The snapshot pass against the Firestore emulator, with gatewayConfig/routing edited out of shape in the
// console: the pass plans with the routing the stored snapshots carry and goes on renewing grants. A pass
// that failed instead renewed no grant, and every gateway went stale and stopped serving within minutes
// until someone fixed the document. With nothing published to fall back on, it still fails.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotPassDeps } from '../../functions/snapshot/src/deps.js';
import { runSnapshotPass } from '../../functions/snapshot/src/pass.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import {
  FirestoreRoutingStore,
  ROUTING_DOC,
} from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../shared/src/ports/workers.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { countingHolders, firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { poolProxy } from '../support/worker-client.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
afterAll(() => db.terminate());
const T0 = new Date('2026-12-02T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

const SHOP = {
  name: 'shop',
  match: { hosts: ['shop.example'] },
  selector: {},
  policy: 'round-robin' as const,
};

const deps = (clock: ManualClock, log = memoryLogger()): SnapshotPassDeps & { log: typeof log } => ({
  ...firestorePassDeps(db, clock, []),
  log,
  lockMs: 60_000,
  newHolder: countingHolders(),
});

/** gatewayConfig/routing as a console edit leaves it: a policy no release knows. */
const breakRouting = () =>
  db
    .collection(Collections.gatewayConfig)
    .doc(ROUTING_DOC)
    .set({
      routes: [{ ...SHOP, policy: 'fastest' }],
      targetChecks: {},
      updatedAt: Timestamp.fromDate(T0),
      updatedBy: 'console',
      revision: 2,
    });

beforeEach(() => clearProject(projectId));

describe('a stored routing that no longer fits the route schema', () => {
  it('is replaced by the routing last published, and grants go on being renewed', async () => {
    const clock = new ManualClock(T0);
    // Live through both passes: its grant (180 s from T0) is due for renewal at 40 s (under 150 s left).
    await new FirestoreWorkerStore(db).put(record('gw-1', at(120)), null);
    await new FirestoreProxyStore(db).create(poolProxy('ri-1', 1));
    await new FirestoreRoutingStore(db).put({ routes: [SHOP], updatedAt: T0, updatedBy: 'admin' });
    expect(await runSnapshotPass(deps(clock))).toMatchObject({ published: 1, failures: 0 });
    const snapshots = new FirestoreSnapshotStore(db);
    const first = (await snapshots.loadFull('gw-1'))!;
    expect(first.routing).toEqual([SHOP]);

    await breakRouting();
    await expect(new FirestoreRoutingStore(db).get()).rejects.toMatchObject({ kind: 'invalid' });
    clock.set(at(40));
    const log = memoryLogger();
    expect(await runSnapshotPass(deps(clock, log))).toMatchObject({ published: 1, failures: 0 });
    const renewed = (await snapshots.loadFull('gw-1'))!;
    expect(renewed.version).toBe(first.version + 1);
    expect(renewed.routing).toEqual([SHOP]);
    expect(renewed.proxies.map((p) => p.name)).toEqual(['ri-1']);
    expect(renewed.validUntil).toBe(at(220).toISOString());
    expect((await snapshots.header('gw-1'))!.grantedUntil).toEqual(at(220));
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        event: 'gateway.routing_invalid',
        snapshot: { workerId: 'gw-1', version: first.version },
      }),
    );
  });

  it('still fails the pass when no snapshot was ever stored to take a routing from', async () => {
    const clock = new ManualClock(T0);
    await new FirestoreWorkerStore(db).put(record('gw-1', at(120)), null);
    await new FirestoreProxyStore(db).create(poolProxy('ri-1', 1));
    await breakRouting();
    const failed = runSnapshotPass(deps(clock));
    await expect(failed).rejects.toBeInstanceOf(WorkerStoreError);
    await expect(failed).rejects.toMatchObject({ kind: 'invalid' });
    expect(await new FirestoreSnapshotStore(db).header('gw-1')).toBeNull();
  });
});
