// The gc function as deployed (a functions-framework process behind a Pub/Sub push subscription), sweeping
// the Compute emulator through the real @google-cloud/compute client, with the live set read from the
// Firestore emulator: labelled, unlabelled, young and old instances of live, deleting and missing proxies.
import { randomUUID } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { computeClients } from '../../emulators/compute/testing.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { buildInsertRequest } from '../../shared/src/adapters/gce/build-insert-request.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import type { GceProvider } from '../../shared/src/adapters/gce/gce-provider.js';
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import type { InstanceRequest } from '../../shared/src/domain/reconcile/types.js';
import { Tick } from '../../shared/src/messages/tick.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { testProjectId } from '../support/emulators.js';
import { instanceRequest } from '../support/instance-request.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually, finishedRun, functionLog, jsonLines } from './gc-support.js';

const HOUR = 3_600_000;
const ZONE = 'us-central1-a';

describe('gc sweep against the Compute emulator (seed §8)', () => {
  const projectId = testProjectId();
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let gce: { provider: GceProvider; close(): Promise<void> };
  let db: Firestore;
  let store: FirestoreProxyStore;

  const requestFor = (uid: string, zone = ZONE): InstanceRequest => instanceRequest({ uid, zone });

  /** An instance as reconcile would create it: labelled with the proxy's uid. */
  const labelled = async (uid: string, { ageMs = 0, zone = ZONE } = {}) => {
    const { providerId } = await gce.provider.create(requestFor(uid, zone));
    if (ageMs > 0) compute.admin.backdate(projectId, zone, instanceNameFromUid(uid), { ageMs });
    return providerId;
  };

  /** An instance someone else made in the project: no ownership label (or only part of ours). */
  const foreign = async (name: string, labels: Record<string, string>) => {
    const insert = buildInsertRequest({ ...requestFor(randomUUID()), name }, { project: projectId });
    insert.instanceResource!.labels = labels;
    const clients = computeClients(compute.endpoint);
    await clients.instances.insert(insert);
    await clients.close();
    compute.admin.backdate(projectId, ZONE, name, { ageMs: 24 * HOUR });
  };

  const names = () =>
    compute.admin
      .instances({ project: projectId })
      .filter((i) => i.status !== 'STOPPING')
      .map((i) => i.name)
      .sort();

  const sweep = async () => {
    const since = new Date();
    await plane.publisher.publish('ticks-gc', Tick, { job: 'gc-sweep' });
    return finishedRun(db, 'gc-sweep', since);
  };

  const gcLog = () => jsonLines(functionLog(plane.logDir, 'gc'));

  beforeAll(async () => {
    compute = await startComputeEmulator({ bootDelayMs: 0, deleteDelayMs: 50 });
    plane = await startTestPlane({
      projectId,
      functions: ['gc'],
      env: {
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        GC_MIN_AGE_SECONDS: '60',
        GC_MIN_RUN_GAP_SECONDS: '0',
      },
    });
    gce = makeGceProvider({ project: projectId, computeEndpoint: compute.endpoint });
    db = new Firestore({ projectId });
    store = new FirestoreProxyStore(db);
  });

  afterAll(async () => {
    await plane?.stop();
    await gce?.close();
    await db?.terminate();
    await compute?.stop();
  });

  beforeEach(async () => {
    await compute.admin.reset();
    compute.admin.clearFaults();
  });

  it('deletes only the old labelled orphan; live, deleting, young, unlabelled and cloned instances are untouched', async () => {
    const live = aProxy({ name: 'live', uid: randomUUID() });
    const deleting = aProxy({ name: 'deleting', uid: randomUUID() });
    await store.create(live);
    await store.create(deleting);
    await store.requestDeletion('deleting', new Date());
    const orphanUid = randomUUID();
    const orphan = await labelled(orphanUid, { ageMs: HOUR });
    await labelled(randomUUID()); // a young orphan: maybe mid-create
    await labelled(live.uid, { ageMs: HOUR });
    await labelled(deleting.uid, { ageMs: HOUR });
    await foreign('not-ours', {});
    await foreign('ours-without-uid', { 'managed-by': 'proxyplane' });
    // Our labels on a VM the plane did not make ("create similar", a machine image of a proxy's VM):
    // named for no uid, it is not ours, whether the uid it carries is a deleted proxy's or a live one's.
    await foreign('debug-clone', { 'managed-by': 'proxyplane', 'proxyplane-uid': randomUUID() });
    await foreign('live-clone', { 'managed-by': 'proxyplane', 'proxyplane-uid': live.uid });
    const before = names();
    expect(before).toHaveLength(8);
    compute.admin.resetCounters();

    const run = await sweep();
    expect(run.ok).toBe(true);
    expect(run.counts).toMatchObject({ instancesDeleted: 1, instancesKept: 5, providersFailed: 0 });
    expect(compute.admin.counters().delete).toBe(1);
    await eventually('the orphan to be gone', () => !names().includes(instanceNameFromUid(orphanUid)));
    expect(names()).toEqual(before.filter((n) => n !== instanceNameFromUid(orphanUid)));

    const deletions = gcLog().filter((l) => l.message === 'gc deleted an orphaned instance');
    expect(deletions).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        event: 'gc.deleted',
        provider: 'gce',
        zone: 'us-central1-a',
        providerId: orphan,
        uid: orphanUid,
      }),
    ]);

    // The next sweep finds nothing more to do.
    const again = await sweep();
    expect(again.counts).toMatchObject({ instancesDeleted: 0, instancesKept: 5 });
    expect(compute.admin.counters().delete).toBe(1);
  });

  it('skips the whole sweep, with a log line, when the live set cannot be read', async () => {
    const orphanUid = randomUUID();
    await labelled(orphanUid, { ageMs: HOUR });
    // A document whose uid cannot be read: its instance could be any of them, so none may be judged.
    await db.doc('proxies/uidless').set({ name: 'uidless', spec: { mode: 'managed' } });
    compute.admin.resetCounters();
    try {
      const run = await sweep();
      expect(run.ok).toBe(false);
      expect(run.error).toContain('live set unreadable');
      expect(compute.admin.counters()).toMatchObject({ aggregatedList: 0, delete: 0 });
      expect(names()).toContain(instanceNameFromUid(orphanUid));
      expect(gcLog()).toContainEqual(
        expect.objectContaining({
          severity: 'ERROR',
          message: 'gc sweep skipped: the live proxy list could not be read (never guess)',
        }),
      );
    } finally {
      await db.doc('proxies/uidless').delete();
    }
    expect((await sweep()).counts).toMatchObject({ instancesDeleted: 1 });
  });

  it('logs a provider whose listing fails, records it, and deletes nothing', async () => {
    const orphanUid = randomUUID();
    await labelled(orphanUid, { ageMs: HOUR });
    // More 503s than the provider's bounded retry absorbs.
    compute.admin.injectErrors({ count: 20, code: 503, operations: ['aggregatedList'] });
    compute.admin.resetCounters();
    const run = await sweep();
    expect(run.ok).toBe(false);
    expect(run.counts).toMatchObject({ providersFailed: 1, instancesDeleted: 0 });
    expect(compute.admin.counters().delete).toBe(0);
    expect(gcLog()).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'gc could not list instances; sweeping the next provider',
        provider: 'gce',
      }),
    );
    compute.admin.clearFaults();
    expect((await sweep()).counts).toMatchObject({ instancesDeleted: 1, providersFailed: 0 });
  });

  it('sweeps the zones that answer and leaves an unreachable zone for the next sweep', async () => {
    const inA = randomUUID();
    const inB = randomUUID();
    await labelled(inA, { ageMs: HOUR });
    await labelled(inB, { ageMs: HOUR, zone: 'us-central1-b' });
    compute.admin.setUnreachableZones(['us-central1-b']);
    const run = await sweep();
    expect(run.counts).toMatchObject({ instancesDeleted: 1, zonesUnreachable: 1 });
    expect(run.ok).toBe(false); // part of the work: zone b's orphans were not seen
    await eventually('the zone-a orphan to be gone', () => !names().includes(instanceNameFromUid(inA)));
    expect(names()).toContain(instanceNameFromUid(inB));
    compute.admin.clearFaults();
    const next = await sweep();
    expect(next.counts).toMatchObject({ instancesDeleted: 1, zonesUnreachable: 0 });
    expect(next.ok).toBe(true);
  });

  it('acknowledges and logs a malformed tick without sweeping', async () => {
    compute.admin.resetCounters();
    const messageId = await plane.publisher.publishRaw('ticks-gc', Buffer.from('{"job": 42}'));
    const logged = () =>
      gcLog().filter((l) => l.message === 'malformed tick acknowledged' && l.messageId === messageId);
    await eventually('the malformed tick to be logged', () => logged().length > 0);
    // Acknowledged, so not redelivered (the local retry policy would redeliver within 1-5 s).
    await new Promise((r) => setTimeout(r, 3000));
    expect(logged()).toHaveLength(1);
    expect(compute.admin.counters().aggregatedList).toBe(0);
  });
});
