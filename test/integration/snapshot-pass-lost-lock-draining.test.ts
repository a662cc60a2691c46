// A snapshot pass that outlived its planner lock stores no snapshot (snapshot-pass-lost-lock.test.ts) — and
// must not rewrite a header's `draining` map either. The API answers a worker's runtime report with
// `revokeProxyIds` read from that map (functions/api/src/workers/report-service.ts): a stale pass writing
// the drains it decided on, over the header the pass now holding the lock wrote, tells the worker to stop
// using proxies no longer draining from it (or not to stop using ones that are) until a later pass notices.
// Real Firestore adapters on the emulator; the stale pass's steps are driven directly.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { actWorkerStep, type StepContext } from '../../functions/snapshot/src/worker-steps.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import type { WorkerBuild } from '../../shared/src/domain/snapshots/plan-pass.js';
import type { GatewaySnapshotMessage } from '../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { firestorePassDeps } from '../support/snapshot-pass-deps.js';
import { storeSnapshot } from '../support/worker-records.js';

const projectId = testProjectId('demo-lostdrain');
const db = new Firestore({ projectId });
const snapshots = new FirestoreSnapshotStore(db);
const ownership = new FirestoreOwnershipStore(db);
afterAll(() => db.terminate());

const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

const build = (draining: Record<string, number>): WorkerBuild => ({
  workerId: 'gw-x',
  sessionId: 's-old',
  protocolVersion: 1,
  grant: at(180),
  owned: [],
  draining,
});

const context = (lockHolder: string): StepContext => ({
  epoch: 3,
  routing: [],
  failOpenRoutes: [],
  now: at(140),
  header: null,
  boundFrom: null,
  ackedVersion: 1,
  lockHolder,
});

beforeEach(async () => {
  await clearProject(projectId);
  // gw-x's header as the pass now holding the lock (pass-b) left it: pz-2 draining away at epoch 3.
  await storeSnapshot(snapshots, 'gw-x', 1, at(200));
  await snapshots.patchHeader('gw-x', { draining: { 'pz-2': 3 } });
  expect(await ownership.acquireLock('pass-b', at(140), at(270))).not.toBeNull();
});

describe('a pass that lost its planner lock leaves the drains the next pass recorded', () => {
  it('patch_draining: refused as a lost race, the header keeps the current pass’s drains', async () => {
    const stale = firestorePassDeps(db, new ManualClock(at(140)), []);
    const r = await actWorkerStep(
      stale,
      { kind: 'patch_draining', build: build({ 'pz-1': 2 }) },
      context('pass-a'),
    );
    expect(r.kind).toBe('lost_race');
    expect((await snapshots.header('gw-x'))?.draining).toEqual({ 'pz-2': 3 });
  });

  it('resend: the stored snapshot may go out again, but its drains are not rewritten', async () => {
    const published: GatewaySnapshotMessage[] = [];
    const stale = firestorePassDeps(db, new ManualClock(at(140)), published);
    const r = await actWorkerStep(stale, { kind: 'resend', build: build({ 'pz-1': 2 }) }, context('pass-a'));
    expect(r.kind).toBe('lost_race');
    expect((await snapshots.header('gw-x'))?.draining).toEqual({ 'pz-2': 3 });
  });

  it('the pass holding the lock still patches its drains', async () => {
    const current = firestorePassDeps(db, new ManualClock(at(140)), []);
    const r = await actWorkerStep(
      current,
      { kind: 'patch_draining', build: build({ 'pz-2': 3, 'pz-3': 3 }) },
      context('pass-b'),
    );
    expect(r.kind).toBe('patch_draining');
    expect((await snapshots.header('gw-x'))?.draining).toEqual({ 'pz-2': 3, 'pz-3': 3 });
  });
});
