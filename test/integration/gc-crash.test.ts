// Brief invariant 1 / seed §8, the gap only the GC closes: the REAL reconcile function (a fixture that
// wraps its provider) creates an instance and is SIGKILLed before the status write; the proxy is then
// deleted, and reconcile — restarted on the same push endpoint, as Cloud Functions would — finds no
// recorded instance and removes the document. The instance is now an orphan: the first GC sweep after
// MinAge deletes it, and nothing else (labelled, unlabelled, young and old instances; live and deleting
// proxies).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { computeClients } from '../../emulators/compute/testing.js';
import { type HostedFunction, hostFunction } from '../../emulators/functions-host/host.js';
import type { ApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { buildInsertRequest } from '../../shared/src/adapters/gce/build-insert-request.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import { loadPubSubTable, type PubSubTable } from '../../shared/src/config/topology.js';
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import type { InstanceRequest } from '../../shared/src/domain/reconcile/types.js';
import { Tick } from '../../shared/src/messages/tick.js';
import { jsonCall, startOpenAdminApi } from '../support/admin-api.js';
import { testProjectId } from '../support/emulators.js';
import { instanceRequest } from '../support/instance-request.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually, finishedRun, functionLog, jsonLines } from './gc-support.js';

const ZONE = 'us-central1-a';
const HOUR = 3_600_000;
const spec = { mode: 'managed', zone: ZONE, cloudInit: { inline: '#!/bin/sh\necho proxy\n' } };

describe('crash between create and the status write → orphan → GC (seed §8)', () => {
  const projectId = testProjectId('demo-crash');
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let restarted: HostedFunction | undefined;
  let api: ApiServer;
  let db: Firestore;
  let store: FirestoreProxyStore;

  const call = async (method: string, path: string, body?: unknown) =>
    (await jsonCall(api.url, method, path, body)).status;
  const doc = async (name: string) => (await store.get(name))?.proxy ?? null;
  const view = () => compute.admin.instances({ project: projectId }).filter((i) => i.status !== 'STOPPING');
  const byName = (name: string) => view().find((i) => i.name === name);
  const backdate = (name: string) => compute.admin.backdate(projectId, ZONE, name, { ageMs: HOUR });
  const sweep = async () => {
    const since = new Date();
    await plane.publisher.publish('ticks-gc', Tick, { job: 'gc-sweep' });
    return finishedRun(db, 'gc-sweep', since);
  };

  beforeAll(async () => {
    compute = await startComputeEmulator({ bootDelayMs: 200, deleteDelayMs: 100 });
    plane = await startTestPlane({
      projectId,
      table: withShortReconcileAckDeadline(loadPubSubTable()),
      functions: [
        {
          name: 'reconcile',
          source: 'test/fixtures/functions/reconcile-crash',
          target: 'reconcile',
          timeoutSeconds: 300,
        },
        'gc',
      ],
      env: {
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        CRASH_AFTER_CREATE_OF: 'victim',
        RECONCILE_PROVISIONING_POLL_MS: '1000',
        RECONCILE_DELETION_POLL_MS: '1000',
        GC_MIN_AGE_SECONDS: '60',
        GC_MIN_RUN_GAP_SECONDS: '0',
      },
    });
    db = new Firestore({ projectId });
    store = new FirestoreProxyStore(db);
    api = await startOpenAdminApi(plane, store);
  }, 120_000);

  afterAll(async () => {
    await api?.close();
    await restarted?.stop();
    await plane?.stop();
    await compute?.stop();
    await db?.terminate();
  });

  it('orphans the instance, and the first sweep after MinAge deletes only that one', {
    timeout: 180_000,
  }, async () => {
    // Two proxies whose instances the reconcile records normally.
    for (const name of ['live', 'deleting'])
      expect(await call('POST', '/v1/proxies', { name, spec })).toBe(201);
    const recorded = async (name: string) =>
      eventually(`${name}'s instance recorded`, async () => {
        const p = await doc(name);
        return p?.status.providerId ? p : undefined;
      });
    const live = await recorded('live');
    const deleting = await recorded('deleting');

    // The victim: create lands, then SIGKILL before the status write.
    const fixture = plane.functions.reconcile!;
    expect(await call('POST', '/v1/proxies', { name: 'victim', spec })).toBe(201);
    expect(await fixture.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const victim = (await doc('victim'))!;
    const victimInstance = instanceNameFromUid(victim.uid);
    expect(victim.status.providerId).toBeNull();
    expect(byName(victimInstance)?.labels).toMatchObject({ 'proxyplane-uid': victim.uid });
    expect(jsonLines(functionLog(plane.logDir, 'reconcile'))).toContainEqual(
      expect.objectContaining({ severity: 'CRITICAL', proxy: 'victim' }),
    );

    // The user deletes it while no reconcile runs; then reconcile comes back on the same endpoint, gets
    // the requests, finds no recorded instance and removes the document.
    expect(await call('DELETE', '/v1/proxies/victim')).toBeLessThan(300);
    restarted = await hostFunction({
      fn: { name: 'reconcile', source: 'functions/reconcile', target: 'reconcile', timeoutSeconds: 300 },
      port: fixture.port,
      env: plane.env,
      logFile: join(plane.logDir, 'function-reconcile-restarted.log'),
    });
    // On GCP the requests pending during the crash come back by the retry policy. The emulator may hold
    // them until their ack deadline instead (see withShortReconcileAckDeadline), so the test also asks
    // for a pass now and then (POST …/reconcile, as an operator would): any request runs the same pass.
    let nudged = 0;
    await eventually(
      'the victim document to be deleted',
      async () => {
        if ((await doc('victim')) === null) return true;
        if (nudged++ % 40 === 39) await call('POST', '/v1/proxies/victim/reconcile');
        return undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    expect(byName(victimInstance)).toBeDefined();

    // A sweep now: the orphan is younger than MinAge (it may be mid-create as far as the GC can tell).
    compute.admin.resetCounters();
    const early = await sweep();
    expect(early.counts).toMatchObject({ instancesDeleted: 0 });
    expect(byName(victimInstance)).toBeDefined();

    // MinAge passes for every instance; a proxy's deletion is requested but its reconcile has not run;
    // someone else's instance sits in the project; a new orphan-looking instance is mid-create.
    for (const p of [live, deleting]) backdate(instanceNameFromUid(p.uid));
    backdate(victimInstance);
    await store.requestDeletion('deleting', new Date());
    await foreignInstance(compute, projectId, 'someone-elses-vm');
    const gce = makeGceProvider({ project: projectId, computeEndpoint: compute.endpoint });
    const youngUid = randomUUID();
    await gce.provider.create(requestFor(youngUid));
    await gce.close();
    const before = new Map(view().map((i) => [i.name, i.id]));
    expect(before.size).toBe(5);

    const run = await sweep();
    expect(run.counts).toMatchObject({ instancesDeleted: 1, instancesKept: 3, providersFailed: 0 });
    expect(compute.admin.counters().delete).toBe(1);
    await eventually('the orphan to be gone', () => byName(victimInstance) === undefined);
    const after = new Map(view().map((i) => [i.name, i.id]));
    before.delete(victimInstance);
    expect(after).toEqual(before); // same instances, same ids: nothing else deleted or replaced
    expect(jsonLines(functionLog(plane.logDir, 'gc'))).toContainEqual(
      expect.objectContaining({
        event: 'gc.deleted',
        provider: 'gce',
        providerId: `zones/${ZONE}/instances/${victimInstance}`,
        uid: victim.uid,
      }),
    );

    // The young one was kept for its age alone: once old, it goes too (its uid matches no proxy).
    backdate(instanceNameFromUid(youngUid));
    expect((await sweep()).counts).toMatchObject({ instancesDeleted: 1 });
    expect(compute.admin.counters().delete).toBe(2);
    expect(byName(instanceNameFromUid(live.uid))?.status).toBe('RUNNING');
    expect(byName(instanceNameFromUid(deleting.uid))?.status).toBe('RUNNING');
  });
});

/**
 * The Pub/Sub emulator (0.8.x) differs from GCP here: once pushes to a dead endpoint have failed for
 * ~10 s, it stops retrying them by the retry policy and redelivers only when their ack deadline
 * expires (reconcile's is 300 s, to cover its timeout). A short deadline lets the requests that were
 * pending during the crash come back within the test, as GCP's retry policy would bring them.
 */
function withShortReconcileAckDeadline(table: PubSubTable): PubSubTable {
  const topics = structuredClone(table.topics);
  topics['reconcile-requests'] = { ...topics['reconcile-requests']!, ackDeadlineSeconds: 15 };
  return { ...table, topics };
}

function requestFor(uid: string): InstanceRequest {
  return instanceRequest({ uid, proxyName: 'mid-create', zone: ZONE });
}

/** An old instance without our labels, made with the real client. */
async function foreignInstance(compute: ComputeEmulator, project: string, name: string): Promise<void> {
  const insert = buildInsertRequest({ ...requestFor(randomUUID()), name }, { project });
  insert.instanceResource!.labels = {};
  const clients = computeClients(compute.endpoint);
  await clients.instances.insert(insert);
  await clients.close();
  compute.admin.backdate(project, ZONE, name, { ageMs: 24 * HOUR });
}
