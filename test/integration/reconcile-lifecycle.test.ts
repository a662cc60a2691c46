// Issue 3 end to end on the local plane: the admin API (in process, on a real socket) writes Firestore
// and publishes; the reconcile and requeue functions run as real functions-framework processes behind
// Pub/Sub emulator pushes; the Scheduler ticks the requeue sweep; the gce provider drives the Compute
// emulator through the real @google-cloud/compute client. Poll intervals are shortened by env.
import { randomUUID } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import type { ApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import { type ProxyResource, ProxySpec } from '../../shared/src/domain/proxy.js';
import { ReconcileRequest } from '../../shared/src/messages/reconcile-request.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { jsonCall, startOpenAdminApi } from '../support/admin-api.js';
import { testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { functionLog, jsonLines } from './gc-support.js';

const ZONE = 'us-central1-a';
const managed = (over: Record<string, unknown> = {}) => ({
  mode: 'managed',
  zone: ZONE,
  cloudInit: { inline: '#!/bin/sh\necho proxy\n' },
  ...over,
});

let compute: ComputeEmulator;
let plane: TestPlane;
let api: ApiServer;
let db: Firestore;
let store: FirestoreProxyStore;
const projectId = testProjectId('demo-rlife');

beforeAll(async () => {
  compute = await startComputeEmulator({ bootDelayMs: 1_000, deleteDelayMs: 500 });
  plane = await startTestPlane({
    projectId,
    functions: ['reconcile', 'requeue'],
    scheduler: { start: true },
    env: {
      COMPUTE_EMULATOR_HOST: compute.endpoint,
      RECONCILE_PROVISIONING_POLL_MS: '1000',
      RECONCILE_DELETION_POLL_MS: '1000',
      RECONCILE_DRIFT_POLL_MS: '3000',
      RECONCILE_QUOTA_RETRY_MS: '3000',
    },
  });
  db = new Firestore({ projectId });
  store = new FirestoreProxyStore(db);
  api = await startOpenAdminApi(plane, store);
}, 120_000);

afterAll(async () => {
  await api?.close();
  await plane?.stop();
  await compute?.stop();
  await db?.terminate();
});

const call = (method: string, path: string, body?: unknown) => jsonCall(api.url, method, path, body);

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 45_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!ok(last)) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
    last = await probe();
  }
  return last;
}

/** First passes the reconcile function logged for deliveries of {proxy, reason}: one per delivery handled. */
const deliveriesHandled = (proxy: string, reason: string) =>
  jsonLines(functionLog(plane.logDir, 'reconcile')).filter(
    (l) => l.message === 'reconcile pass' && l.proxy === proxy && l.reason === reason && l.pass === 1,
  ).length;

const doc = async (name: string): Promise<ProxyResource | null> => (await store.get(name))?.proxy ?? null;
const instancesOf = (uid: string) =>
  compute.admin.instances({ project: projectId }).filter((i) => i.labels['proxyplane-uid'] === uid);
const provisioned = (name: string) =>
  until(
    `${name} Provisioned`,
    () => doc(name),
    (p) => p?.status.phase === 'Provisioned' && p.status.ip !== null,
  );

describe('reconcile on the local plane', () => {
  it('create through the API → instance RUNNING in the emulator → Provisioned with its address', async () => {
    expect((await call('POST', '/v1/proxies', { name: 'life-1', spec: managed() })).status).toBe(201);
    const p = (await provisioned('life-1'))!;
    const [inst] = instancesOf(p.uid);
    expect(inst).toMatchObject({ name: instanceNameFromUid(p.uid), status: 'RUNNING', zone: ZONE });
    expect(p.status.ip).toBe(inst?.address);
    expect(p.status.providerId).toBe(`zones/${ZONE}/instances/${inst?.name}`);
    expect(inst?.labels).toMatchObject({ 'managed-by': 'proxyplane', 'proxyplane-name': 'life-1' });
  });

  it('a spec edit deletes the old instance and creates a new one', async () => {
    const before = (await doc('life-1'))!;
    const oldId = instancesOf(before.uid)[0]?.id;
    expect((await call('PATCH', '/v1/proxies/life-1/spec', { machineType: 'e2-medium' })).status).toBe(200);
    const after = await until(
      'a new instance',
      async () => ({ p: await doc('life-1'), insts: instancesOf(before.uid) }),
      ({ p, insts }) => p?.status.phase === 'Provisioned' && insts.length === 1 && insts[0]?.id !== oldId,
    );
    expect(after.p!.status.specHash).not.toBe(before.status.specHash);
    expect(after.p!.status.observedGeneration).toBe(2);
  });

  it('delete → the instance goes, then the document', async () => {
    const p = (await doc('life-1'))!;
    expect((await call('DELETE', '/v1/proxies/life-1')).status).toBeLessThan(300);
    await until(
      'document gone',
      () => doc('life-1'),
      (d) => d === null,
    );
    expect(instancesOf(p.uid)).toEqual([]);
    expect((await call('GET', '/v1/proxies/life-1')).status).toBe(404);
  });

  it('quota fault → QuotaExceeded, then Provisioned once the fault clears', async () => {
    compute.admin.injectQuota({ count: 1, mode: 'sync' });
    expect((await call('POST', '/v1/proxies', { name: 'quota-1', spec: managed() })).status).toBe(201);
    const quota = await until(
      'QuotaExceeded',
      () => doc('quota-1'),
      (p) => p?.status.conditions.some((c) => c.reason === 'QuotaExceeded') ?? false,
    );
    expect(quota!.status.nextReconcileAt).not.toBeNull();
    await provisioned('quota-1');
  });

  it('async quota fault (insert accepted, Operation fails) → QuotaExceeded and provider.quota_exceeded, then Provisioned', async () => {
    // Only zoneOperations.list tells this apart from an instance that vanished: without it reconcile
    // re-inserted every pass and never said why.
    compute.admin.injectQuota({ count: 1, mode: 'async' });
    expect((await call('POST', '/v1/proxies', { name: 'aquota-1', spec: managed() })).status).toBe(201);
    const quota = await until(
      'QuotaExceeded',
      () => doc('aquota-1'),
      (p) => p?.status.conditions.some((c) => c.reason === 'QuotaExceeded') ?? false,
    );
    expect(quota!.status.nextReconcileAt).not.toBeNull();
    // The function logs the event after its status write lands: the document can be read first.
    const events = await until(
      'provider.quota_exceeded logged',
      async () =>
        jsonLines(functionLog(plane.logDir, 'reconcile')).filter(
          (l) => l.event === 'provider.quota_exceeded' && l.proxy === 'aquota-1',
        ),
      (found) => found.length > 0,
      10_000,
    );
    expect(events[0]).toMatchObject({ severity: 'WARNING', zone: ZONE });
    await provisioned('aquota-1');
  });

  it('permanent fault → Failed: latched until a spec edit, each manual request one attempt past it', async () => {
    const bad = managed({ machineType: 'n9-nonexistent-1' });
    expect((await call('POST', '/v1/proxies', { name: 'perm-1', spec: bad })).status).toBe(201);
    await until(
      'Failed',
      () => doc('perm-1'),
      (p) => p?.status.phase === 'Failed',
    );
    // What operations.md sends a person to read: it must say what GCE refused, not only "HTTP 400 invalid".
    const failed = (await doc('perm-1'))!.status.conditions.find((c) => c.type === 'Provisioned');
    expect(failed?.reason).toBe('PermanentError');
    expect(failed?.message).toMatch(
      /^instances\.insert failed: HTTP 400 invalid: .*machineType.*n9-nonexistent-1/,
    );
    const inserts = compute.admin.counters().insert;
    const handled = deliveriesHandled('perm-1', 'manual');
    for (let i = 0; i < 3; i++)
      expect((await call('POST', '/v1/proxies/perm-1/reconcile')).status).toBeLessThan(300);
    // All three requests reconciled (a provider call comes before the pass is logged): each tried the
    // create once more — the operator's way to retry a cause outside the spec — and was refused again.
    await until(
      'the three manual requests to be reconciled',
      async () => deliveriesHandled('perm-1', 'manual'),
      (n) => n >= handled + 3,
    );
    expect(compute.admin.counters().insert).toBe(inserts + 3);
    expect((await doc('perm-1'))!.status.phase).toBe('Failed');
    expect((await call('PATCH', '/v1/proxies/perm-1/spec', { machineType: 'e2-small' })).status).toBe(200);
    await provisioned('perm-1');
  });

  it('a stopped instance is replaced (cattle), found by the drift poll', async () => {
    const p = (await provisioned('quota-1'))!;
    const old = instancesOf(p.uid)[0]!;
    compute.admin.stopInstance(projectId, ZONE, old.name);
    await until(
      'a fresh RUNNING instance',
      async () => ({ d: await doc('quota-1'), insts: instancesOf(p.uid) }),
      ({ d, insts }) =>
        d?.status.phase === 'Provisioned' &&
        insts.length === 1 &&
        insts[0]?.id !== old.id &&
        insts[0]?.status === 'RUNNING',
    );
  });

  it('20 duplicate deliveries through Pub/Sub create exactly one instance', async () => {
    const proxy = aProxy({ name: 'dup-ps', uid: randomUUID(), spec: ProxySpec.parse(managed()) });
    await store.create(proxy);
    await Promise.all(
      Array.from({ length: 20 }, () =>
        plane.publisher.publish('reconcile-requests', ReconcileRequest, {
          proxy: 'dup-ps',
          reason: 'created',
        }),
      ),
    );
    await provisioned('dup-ps');
    // Every delivery handled before counting instances: a late duplicate could still create a second.
    await until(
      'all 20 deliveries to be reconciled',
      async () => deliveriesHandled('dup-ps', 'created'),
      (n) => n >= 20,
    );
    expect(instancesOf(proxy.uid)).toHaveLength(1);
  });

  it('an external proxy gets its ip from the endpoint and causes no provider call', async () => {
    const before = compute.admin.counters();
    const spec = { mode: 'external', endpoint: { host: '198.51.100.20', port: 3128 } };
    expect((await call('POST', '/v1/proxies', { name: 'ext-1', spec })).status).toBe(201);
    const p = await until(
      'external Provisioned',
      () => doc('ext-1'),
      (d) => d?.status.phase === 'Provisioned',
    );
    expect(p!.status).toMatchObject({ ip: '198.51.100.20', providerId: null });
    expect(p!.status.conditions[0]).toMatchObject({
      type: 'Provisioned',
      status: 'True',
      reason: 'ExternalEndpoint',
    });
    const after = compute.admin.counters();
    expect(after.insert).toBe(before.insert);
    expect(after.delete).toBe(before.delete);
    expect(instancesOf(p!.uid)).toEqual([]);
  });
});
