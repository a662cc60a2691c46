// A proxy document that no longer fits the model (hand-edited in the console: a field of the wrong type),
// end to end on the local plane: the admin API in process, the real reconcile and gc functions behind
// Pub/Sub pushes, the gce provider on the Compute emulator. An operator sees what is wrong (GET: 500
// stored_proxy_invalid naming the fields, never their values; the list: `skipped`), reconcile acknowledges
// it rather than crash or retry, and DELETE removes it: reconcile removes the document, and the orphan GC
// deletes its instance (docs/api.md § Delete, docs/gc-and-rotation.md).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import type { ApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { Tick } from '../../shared/src/messages/tick.js';
import { jsonCall, startOpenAdminApi } from '../support/admin-api.js';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { eventually, finishedRun, functionLog, jsonLines } from './gc-support.js';

const ZONE = 'us-central1-a';
const HOUR = 3_600_000;
const SECRET_LOOKING = 'hunter2-pasted-here';
const spec = { mode: 'managed', zone: ZONE, cloudInit: { inline: '#!/bin/sh\necho proxy\n' } };

describe('a stored proxy document that does not fit the model', () => {
  const projectId = testProjectId('demo-sinv');
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let api: ApiServer;
  let db: Firestore;
  let store: FirestoreProxyStore;
  let wreckUid: string;

  const call = (method: string, path: string, body?: unknown) => jsonCall(api.url, method, path, body);
  const reconcileLog = () => jsonLines(functionLog(plane.logDir, 'reconcile'));
  const instanceOf = (uid: string) =>
    compute.admin
      .instances({ project: projectId })
      .find((i) => i.labels['proxyplane-uid'] === uid && i.status !== 'STOPPING');
  // No requeue function here: the test stands in for its sweep, asking for a pass while the proxy waits.
  const provisioned = (name: string) =>
    eventually(
      `${name} Provisioned`,
      async () => {
        const p = (await store.get(name))?.proxy;
        if (p?.status.phase === 'Provisioned') return p;
        await plane.publisher.publish('reconcile-requests', ReconcileRequest, {
          proxy: name,
          reason: 'requeue',
        });
        return undefined;
      },
      { timeoutMs: 45_000, intervalMs: 1_000 },
    );

  beforeAll(async () => {
    compute = await startComputeEmulator({ bootDelayMs: 200, deleteDelayMs: 100 });
    plane = await startTestPlane({
      projectId,
      functions: ['reconcile', 'gc'],
      env: {
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        RECONCILE_PROVISIONING_POLL_MS: '1000',
        RECONCILE_DELETION_POLL_MS: '1000',
        GC_MIN_AGE_SECONDS: '60',
        GC_MIN_RUN_GAP_SECONDS: '0',
      },
    });
    db = new Firestore({ projectId });
    store = new FirestoreProxyStore(db);
    api = await startOpenAdminApi(plane, store);
    expect((await call('POST', '/v1/proxies', { name: 'keeper', spec })).status).toBe(201);
    expect((await call('POST', '/v1/proxies', { name: 'wreck', spec })).status).toBe(201);
    await provisioned('keeper');
    wreckUid = (await provisioned('wreck')).uid;
    // The hand-edit: a port of the wrong type, holding what a careless paste put there, and a phase that
    // no version ever wrote.
    await db.doc('proxies/wreck').update({ 'spec.port': SECRET_LOOKING, 'status.phase': 'Sideways' });
  }, 120_000);

  afterAll(async () => {
    await api?.close();
    await plane?.stop();
    await compute?.stop();
    await db?.terminate();
  });

  it('GET answers 500 stored_proxy_invalid naming the fields that fail, never their values', async () => {
    const res = await call('GET', '/v1/proxies/wreck');
    expect(res.status).toBe(500);
    expect(res.body.error).toBe('stored_proxy_invalid');
    expect(res.body.issues.map((i: { path: string }) => i.path)).toEqual(['spec.port', 'status.phase']);
    expect(res.body.message).toContain('DELETE /v1/proxies/wreck');
    expect(res.text).not.toContain('hunter2');
    // PUT/PATCH and POST …/reconcile meet the same answer: nothing is written or published on such a read.
    expect((await call('PATCH', '/v1/proxies/wreck/spec', { capacity: 2 })).body.error).toBe(
      'stored_proxy_invalid',
    );
  });

  it('the list leaves it out and says so', async () => {
    const res = await call('GET', '/v1/proxies');
    expect(res.status).toBe(200);
    expect(res.body.proxies.map((p: { name: string }) => p.name)).toEqual(['keeper']);
    expect(res.body).toMatchObject({ count: 1, skipped: { count: 1, names: ['wreck'] } });
    // A query the document does not match does not report it.
    const filtered = await call('GET', '/v1/proxies?attr.pool=none');
    expect(filtered.body).toEqual({ proxies: [], count: 0 });
  });

  it('reconcile acknowledges a request for it, logs which fields fail, and touches nothing', async () => {
    await plane.publisher.publish('reconcile-requests', ReconcileRequest, {
      proxy: 'wreck',
      reason: 'manual',
    });
    const line = await eventually('the reconcile log line', () =>
      reconcileLog().find((l) => l.event === 'reconcile.invalid_document' && l.proxy === 'wreck'),
    );
    expect(line).toMatchObject({ severity: 'ERROR', fields: ['spec.port', 'status.phase'] });
    // One line that says what is wrong, not a failed pass's stack beside it.
    expect(
      reconcileLog().filter((l) => l.proxy === 'wreck' && l.message === 'reconcile pass failed'),
    ).toEqual([]);
    expect(JSON.stringify(reconcileLog())).not.toContain('hunter2');
    expect((await db.doc('proxies/wreck').get()).get('spec.port')).toBe(SECRET_LOOKING);
    expect(instanceOf(wreckUid)?.status).toBe('RUNNING');
  });

  it('DELETE removes the document through reconcile, and the orphan GC its instance', async () => {
    const res = await call('DELETE', '/v1/proxies/wreck');
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      name: 'wreck',
      uid: wreckUid,
      storedProxyInvalid: { issues: [{ path: 'spec.port' }, { path: 'status.phase' }] },
    });
    expect(res.headers.get('etag')).toBeNull();
    expect(res.text).not.toContain('hunter2');

    await eventually('the document removed', async () => !(await db.doc('proxies/wreck').get()).exists, {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    // The line follows the delete: on a loaded machine it reaches the log a moment after the document goes.
    const deleted = await eventually('the deletion log line', () =>
      reconcileLog().find((l) => l.event === 'reconcile.invalid_document_deleted'),
    );
    expect(deleted).toMatchObject({ proxy: 'wreck', uid: wreckUid });
    expect((await call('GET', '/v1/proxies/wreck')).status).toBe(404);
    expect((await call('GET', '/v1/proxies')).body).not.toHaveProperty('skipped');

    // Reconcile left the VM alone; its uid is now in no document, so the first sweep past MinAge takes it.
    const vm = instanceOf(wreckUid)!;
    expect(vm.name).toBe(instanceNameFromUid(wreckUid));
    compute.admin.backdate(projectId, ZONE, vm.name, { ageMs: HOUR });
    const since = new Date();
    await plane.publisher.publish('ticks-gc', Tick, { job: 'gc-sweep' });
    const run = await finishedRun(db, 'gc-sweep', since);
    expect(run).toMatchObject({ ok: true, counts: { instancesDeleted: 1 } });
    expect(instanceOf(wreckUid)).toBeUndefined();
    const keeper = (await store.get('keeper'))!.proxy;
    expect(instanceOf(keeper.uid)?.status).toBe('RUNNING');

    // The name is free again.
    expect((await call('POST', '/v1/proxies', { name: 'wreck', spec })).status).toBe(201);
  });
});
