// Replacements roll (docs/gc-and-rotation.md § Rolling replacement): a spec change that leaves what
// clients are handed as it was (here the machine type; an upgrade of the default startup script is the
// other) replaces the fleet at most RECONCILE_MAX_REPLACING at a time instead of deleting every VM at
// once, each waiting proxy serving on its old VM meanwhile. A rotation of the credentials every proxy
// shares rolls the same way: a waiting VM keeps the version it booted with, and leases and the probe use
// that version (status.servedCredentials) until its turn; disabling that version revokes it, and the
// proxies still on it are replaced at once; disabling the NEWEST version mid-roll builds nothing on it and
// takes nothing down (the VMs keep serving the versions they booted with). The whole path on the local plane — reconcile, requeue,
// rotation and probe as functions-framework processes, the real slot adapter on the Firestore emulator,
// VMs in the Compute emulator reading their credentials by reference from the Secret Manager emulator,
// leases from the API's lease service with the real Secret Manager client. A sampler counts the proxies
// with no RUNNING instance every few milliseconds: sampling can miss a violation, never invent one.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchThroughProxy } from '../../docs/examples/crawler.js';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { type EchoTarget, requestViaProxy, startEchoTarget } from '../../emulators/forward-proxy/testing.js';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import type { ApiServer } from '../../functions/api/src/server.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import {
  FirestoreReplacementSlots,
  REPLACEMENT_SLOTS_DOC,
} from '../../shared/src/adapters/firestore/replacement-slots.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { startOpenAdminApi } from '../support/admin-api.js';
import { pubsubHost, testProjectId } from '../support/emulators.js';
import { recordInstanceEvents } from '../support/instance-events.js';
import { ADMIN_TOKEN, leaseTestApp } from '../support/leases.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { untilStable } from '../support/poll.js';
import { eventually, functionLog, jsonLines, privateLoopbackRange } from './gc-support.js';

const ZONE = 'us-central1-a';
const MAX_REPLACING = 2;
const NAMES = ['r0', 'r1', 'r2', 'r3', 'r4'];

describe('a fleet-wide spec change replaces the fleet at most RECONCILE_MAX_REPLACING at a time', () => {
  const projectId = testProjectId('demo-roll');
  const pubsub = createPubSub(projectId, `${pubsubHost().host}:${pubsubHost().port}`);
  let sm: SecretManagerEmulator;
  let secrets: SecretManagerServiceClient;
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let api: ApiServer;
  let db: Firestore;
  let store: FirestoreProxyStore;
  let target: EchoTarget;
  let sampler: NodeJS.Timeout | undefined;
  let leases: LeaseApiRuntime | undefined;
  /** What the Compute emulator built and deleted, in order. */
  const instances = recordInstanceEvents();
  /** The most fleet proxies seen at once with no RUNNING instance, and the sample that showed it. */
  let maxDown = 0;
  let worst: string[] = [];
  let uids: string[] = [];
  /** Each proxy as last seen serving: before the first change, then after it. */
  let before: Record<string, ProxyResource> = {};

  const secretName = (id: string) => `projects/${projectId}/secrets/${id}`;
  const addVersion = async (id: string, value: string) =>
    (await secrets.addSecretVersion({ parent: secretName(id), payload: { data: Buffer.from(value) } }))[0]
      .name!;
  const doc = async (name: string) => (await store.get(name))!.proxy;
  const serving = (p: ProxyResource) =>
    p.status.ip !== null && p.status.conditions.some((c) => c.type === 'Provisioned' && c.status === 'True');

  const sample = () => {
    const running = new Set<string>();
    for (const i of compute.admin.instances({ project: projectId })) {
      const uid = i.labels['proxyplane-uid'];
      if (!uid) continue;
      if (i.status === 'RUNNING') running.add(uid);
    }
    const down = uids.filter((u) => !running.has(u));
    if (down.length > maxDown) {
      maxDown = down.length;
      worst = down;
    }
  };

  beforeAll(async () => {
    target = await startEchoTarget();
    sm = await startSecretManagerEmulator({ pubsub, log: () => {} });
    const smEndpoint = `${sm.host}:${sm.port}`;
    secrets = createSecretManagerClient(smEndpoint);
    compute = await startComputeEmulator({
      // Long enough that replacing the whole fleet at once would show every proxy down together.
      bootDelayMs: 1_000,
      deleteDelayMs: 200,
      secretManagerEndpoint: smEndpoint,
      addressRange: privateLoopbackRange(),
      log: instances.log,
    });
    plane = await startTestPlane({
      projectId,
      functions: ['reconcile', 'requeue', 'rotation', 'probe'],
      scheduler: { start: true },
      env: {
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        SECRET_MANAGER_EMULATOR_HOST: smEndpoint,
        // The sweep looks for due proxies five times a second (default once): each step of a replacement
        // (deleted, gone, created, running) waits for it, and none of them is what this file tests.
        REQUEUE_POLL_MS: '200',
        RECONCILE_PROVISIONING_POLL_MS: '300',
        RECONCILE_DELETION_POLL_MS: '300',
        RECONCILE_DRIFT_POLL_MS: '60000',
        RECONCILE_MAX_REPLACING: String(MAX_REPLACING),
        RECONCILE_REPLACEMENT_RETRY_MS: '500',
        PROBE_TICK_PERIOD_SECONDS: '2',
        PROBE_CALLER_IPS: '127.0.0.1',
      },
    });
    db = new Firestore({ projectId });
    store = new FirestoreProxyStore(db);
    api = await startOpenAdminApi(plane, store);
  }, 120_000);

  afterAll(async () => {
    clearInterval(sampler);
    await leases?.stop();
    await api?.close();
    await plane?.stop();
    await compute?.stop();
    await secrets?.close();
    await sm?.stop();
    await pubsub.close();
    await target?.close();
    await db?.terminate();
  });

  it('replaces every proxy exactly once, never more than the cap down at once', async () => {
    await secrets.createSecret({
      parent: `projects/${projectId}`,
      secretId: 'creds-shared',
      secret: {
        replication: { automatic: {} },
        topics: [{ name: `projects/${projectId}/topics/secret-events` }],
      },
    });
    await addVersion('creds-shared', 'crawler:first-Pa55');
    for (const name of NAMES) {
      const res = await fetch(`${api.url}/v1/proxies`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name,
          spec: {
            mode: 'managed',
            zone: ZONE,
            credentialsRef: { secret: 'creds-shared' },
            // Probed every second through the VM with what crawlers are handed; two failures and it is out.
            healthCheck: { url: `${target.url}/hello`, intervalSeconds: 1, failureThreshold: 2 },
          },
        }),
      });
      expect(res.status).toBe(201);
    }
    before = {};
    for (const name of NAMES) {
      before[name] = await eventually(
        `${name} serving`,
        async () => {
          const p = await doc(name);
          return serving(p) ? p : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
    }
    uids = NAMES.map((n) => before[n]!.uid);
    const ops = () => {
      const c = compute.admin.counters();
      return { insert: c.insert, delete: c.delete };
    };
    await untilStable(ops, { quietMs: 1_500, timeoutMs: 60_000, what: 'the fleet to settle' });
    const from = instances.events.length;
    sample();
    expect(maxDown).toBe(0);
    sampler = setInterval(sample, 10);

    for (const name of NAMES) {
      const res = await fetch(`${api.url}/v1/proxies/${name}/spec`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ machineType: 'e2-medium' }),
      });
      expect(res.status, await res.text()).toBe(200);
    }
    const after: Record<string, ProxyResource> = {};
    for (const name of NAMES) {
      after[name] = await eventually(
        `${name} replaced and Ready`,
        async () => {
          const p = await doc(name);
          // Ready: its new VM proved healthy, which is what ends a replacement (frees its slot).
          return serving(p) &&
            p.status.phase === 'Ready' &&
            p.status.specHash !== before[name]!.status.specHash &&
            p.status.conditions.some((c) => c.reason === 'Created')
            ? p
            : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 200 },
      );
    }
    await untilStable(ops, { quietMs: 2_000, timeoutMs: 60_000, what: 'inserts and deletes' });
    clearInterval(sampler);
    sample();

    // Exactly once each: one new instance built per proxy and its old one deleted. Instances, not insert
    // requests: two deliveries may create the same deterministic name at once, and the second's 409
    // builds nothing (gce-provider.ts).
    for (const name of NAMES) {
      const uid = before[name]!.uid;
      const built = {
        inserted: instances.count('inserted', uid, from),
        deleted: instances.count('deleted', uid, from),
      };
      expect(built, name).toEqual({ inserted: 1, deleted: 1 });
    }
    // The cap held at every sample, and the sampler did see replacements under way.
    expect(maxDown, `down together: ${worst.join(', ')}`).toBeLessThanOrEqual(MAX_REPLACING);
    expect(maxDown).toBeGreaterThan(0);
    // The proxies that waited said so, and kept serving on their old VM (phase Provisioned, not Provisioning).
    const queued = jsonLines(functionLog(plane.logDir, 'reconcile')).filter(
      (l) => l.message === 'reconcile pass' && l.branch === 'replace/queued',
    );
    expect(queued.length).toBeGreaterThan(0);
    // (Ready once the probe has seen them; never Provisioning, which is what a deleted VM would show.)
    const phases = new Set(queued.map((l) => l.phase).filter(Boolean));
    expect([...phases].filter((ph) => ph !== 'Ready' && ph !== 'Provisioned')).toEqual([]);
    // Every slot is free again (the pass that records the last one healthy frees it; it may trail Ready).
    const slots = new FirestoreReplacementSlots(db, { limit: MAX_REPLACING, clock: systemClock });
    await eventually('every slot free', async () => ((await slots.list()).length === 0 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    // And the fleet serves on its new VMs, with the credentials it had.
    const p = after.r4!;
    const res = await requestViaProxy({ host: p.status.ip!, port: 3128 }, `${target.url}/hello`, {
      auth: { user: 'crawler', pass: 'first-Pa55' },
    });
    expect(res.status).toBe(200);
    before = after;
  }, 180_000);

  /** Replacements elsewhere hold every slot: each proxy has to wait, however fast the box is. */
  const slotsDoc = () => db.collection(Collections.replacements).doc(REPLACEMENT_SLOTS_DOC);
  const holdEverySlot = () =>
    slotsDoc().set({
      slots: Array.from({ length: MAX_REPLACING }, (_, i) => ({
        proxy: `elsewhere-${i}`,
        uid: `00000000-0000-4000-8000-00000000000${i}`,
        takenAt: Timestamp.now(),
      })),
    });
  const queuedOn = (version: string) =>
    Promise.all(
      NAMES.map((name) =>
        eventually(
          `${name} queued, serving version ${version}`,
          async () => {
            const p = await doc(name);
            const queued = p.status.conditions.some((c) => c.reason === 'ReplacementQueued');
            return queued && p.status.servedCredentials?.version === version ? p : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 200 },
        ),
      ),
    );
  const rebuiltOn = (version: string) =>
    Promise.all(
      NAMES.map((name) =>
        eventually(
          `${name} rebuilt on version ${version}`,
          async () => {
            const p = await doc(name);
            return serving(p) &&
              p.status.servedCredentials?.version === version &&
              p.status.conditions.some((c) => c.reason === 'Created')
              ? p
              : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 200 },
        ),
      ),
    );
  const viaProxy = async (p: ProxyResource, pass: string) =>
    (
      await requestViaProxy({ host: p.status.ip!, port: 3128 }, `${target.url}/hello`, {
        auth: { user: 'crawler', pass },
      })
    ).status;
  const leaseUrl = async () => {
    if (!leases) {
      const built = leaseTestApp({
        firestore: db,
        clock: systemClock,
        secrets: new SecretManagerSecretReader(secrets, projectId),
        lease: {},
      });
      leases = built.leases;
      leaseApp = built.app;
    }
    const res = await leaseApp!.request('/v1/leases', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ttlSeconds: 30 }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    return ((await res.json()) as { proxy: { url: string } }).proxy.url;
  };
  let leaseApp: ReturnType<typeof leaseTestApp>['app'] | undefined;

  it('a rotation rolls too: a waiting VM keeps its version, and leases and the probe use that one', async () => {
    await holdEverySlot();
    await addVersion('creds-shared', 'crawler:second-Pa55');
    const queued = await queuedOn('1');
    // The old VMs really serve version 1 and refuse version 2...
    expect(await viaProxy(queued[0]!, 'first-Pa55')).toBe(200);
    expect(await viaProxy(queued[0]!, 'second-Pa55')).toBe(407);
    // ...the probe, which would fail them twice in two seconds with version 2, keeps them Ready...
    const since = Date.now();
    await eventually(
      'three probe runs since the fleet queued',
      async () => {
        const runs = jsonLines(functionLog(plane.logDir, 'probe')).filter(
          (l) =>
            l.message === 'probe run finished' && Date.parse(String(l.time)) > since && Number(l.probed) > 0,
        );
        return runs.length >= 3 ? runs : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    for (const name of NAMES) expect((await doc(name)).status.phase, name).toBe('Ready');
    // ...and a lease hands version 1 out: its URL works through the VM it names.
    const url = await leaseUrl();
    expect(url).toContain('crawler:first-Pa55@');
    expect((await fetchThroughProxy(url, `${target.url}/hello`, 10_000)).status).toBe(200);

    // The slots free up: the rotation rolls through, never more than the cap down at once.
    maxDown = 0;
    worst = [];
    sampler = setInterval(sample, 10);
    await slotsDoc().delete();
    const after = await rebuiltOn('2');
    clearInterval(sampler);
    expect(maxDown, `down together: ${worst.join(', ')}`).toBeLessThanOrEqual(MAX_REPLACING);
    expect(maxDown).toBeGreaterThan(0);
    expect(await viaProxy(after[0]!, 'second-Pa55')).toBe(200);
    expect(await viaProxy(after[0]!, 'first-Pa55')).toBe(407);
  }, 240_000);

  it('disabling the version still served revokes it: the proxies on it are replaced at once, slot or not', async () => {
    await holdEverySlot();
    await addVersion('creds-shared', 'crawler:third-Pa55');
    await queuedOn('2');
    await secrets.disableSecretVersion({ name: `${secretName('creds-shared')}/versions/2` });
    // Every slot is still held by the replacements elsewhere: only the revocation can have rebuilt them.
    const after = await rebuiltOn('3');
    const slots = new FirestoreReplacementSlots(db, { limit: MAX_REPLACING, clock: systemClock });
    expect((await slots.list()).map((s) => s.proxy).sort()).toEqual(['elsewhere-0', 'elsewhere-1']);
    expect(await viaProxy(after[0]!, 'third-Pa55')).toBe(200);
    await slotsDoc().delete();
  }, 180_000);

  it('the newest version disabled mid-roll: the waiting VMs keep serving theirs, and a newer version resumes the roll', async () => {
    await holdEverySlot();
    await addVersion('creds-shared', 'crawler:fourth-Pa55');
    await queuedOn('3');
    // Version 4 turns out bad: disabled before any VM booted with it. Nothing is built on it, and the
    // fleet is not taken down for it: every VM keeps serving version 3, leasable.
    await secrets.disableSecretVersion({ name: `${secretName('creds-shared')}/versions/4` });
    const kept = await Promise.all(
      NAMES.map((name) =>
        eventually(
          `${name} serving version 3 despite version 4`,
          async () => {
            const p = await doc(name);
            const c = p.status.conditions.find((x) => x.type === 'Provisioned');
            return c?.status === 'True' && c.reason === 'CloudInitError' && p.status.phase === 'Ready'
              ? p
              : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 200 },
        ),
      ),
    );
    expect(kept.map((p) => p.status.servedCredentials?.version)).toEqual(NAMES.map(() => '3'));
    expect(await viaProxy(kept[0]!, 'third-Pa55')).toBe(200);
    const url = await leaseUrl();
    expect(url).toContain('crawler:third-Pa55@');
    // A good version 5: the roll resumes from there.
    await addVersion('creds-shared', 'crawler:fifth-Pa55');
    await slotsDoc().delete();
    const after = await rebuiltOn('5');
    expect(await viaProxy(after[0]!, 'fifth-Pa55')).toBe(200);
  }, 240_000);
});
