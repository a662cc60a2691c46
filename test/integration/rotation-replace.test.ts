// Issue 6 "Rotation": the whole path on the local plane. Secrets live in the Secret Manager emulator;
// the reconcile, requeue and rotation functions run as functions-framework processes; the Compute
// emulator's VMs read their proxy credentials by reference from Secret Manager, as deployed VMs do.
// Adding a secret version replaces every proxy that references it exactly once — its new VM serves the
// new credentials — and touches no other proxy; a duplicate notification changes nothing.
import { Firestore } from '@google-cloud/firestore';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import { type EchoTarget, requestViaProxy, startEchoTarget } from '../../emulators/forward-proxy/testing.js';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import type { ApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import type { ProxyResource } from '../../shared/src/domain/proxy.js';
import { startOpenAdminApi } from '../support/admin-api.js';
import { pubsubHost, testProjectId } from '../support/emulators.js';
import { recordInstanceEvents } from '../support/instance-events.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { untilStable } from '../support/poll.js';
import { eventually, functionLog, jsonLines, privateLoopbackRange } from './gc-support.js';

const ZONE = 'us-central1-a';

describe('secret rotation replaces exactly the referencing proxies (seed §1 Secret watch)', () => {
  const projectId = testProjectId('demo-rot');
  const pubsub = createPubSub(projectId, `${pubsubHost().host}:${pubsubHost().port}`);
  let sm: SecretManagerEmulator;
  let secrets: SecretManagerServiceClient;
  let compute: ComputeEmulator;
  let plane: TestPlane;
  let api: ApiServer;
  let db: Firestore;
  let store: FirestoreProxyStore;
  let target: EchoTarget;
  /** What the Compute emulator built and deleted, in order. */
  const instances = recordInstanceEvents();

  const secretName = (id: string) => `projects/${projectId}/secrets/${id}`;
  const addVersion = async (id: string, value: string) =>
    (await secrets.addSecretVersion({ parent: secretName(id), payload: { data: Buffer.from(value) } }))[0]
      .name!;
  const makeSecret = async (id: string, value: string) => {
    await secrets.createSecret({
      parent: `projects/${projectId}`,
      secretId: id,
      secret: {
        replication: { automatic: {} },
        topics: [{ name: `projects/${projectId}/topics/secret-events` }],
      },
    });
    return addVersion(id, value);
  };
  const doc = async (name: string) => (await store.get(name))!.proxy;
  const ready = (name: string, pred: (p: ProxyResource) => boolean = () => true) =>
    eventually(
      `${name} Provisioned`,
      async () => {
        const p = await doc(name);
        return p.status.phase !== 'Pending' &&
          p.status.ip &&
          p.status.conditions.some((c) => c.type === 'Provisioned' && c.status === 'True') &&
          pred(p)
          ? p
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  /**
   * Per proxy of the fleet, the instances built and deleted since `from` (an events index). Instances, not
   * insert requests: two deliveries may create the same deterministic name at once, and the second's 409
   * builds nothing (gce-provider.ts).
   */
  const changedSince = (from: number) =>
    Object.fromEntries(
      Object.entries(fleet).map(([name, p]) => [
        name,
        {
          inserted: instances.count('inserted', p.uid, from),
          deleted: instances.count('deleted', p.uid, from),
        },
      ]),
    );
  /** What changedSince should say when exactly `replaced` were replaced once each. */
  const replacedOnce = (...replaced: string[]) =>
    Object.fromEntries(
      Object.keys(fleet).map((name) => {
        const n = replaced.includes(name) ? 1 : 0;
        return [name, { inserted: n, deleted: n }];
      }),
    );
  const through = (p: ProxyResource, user: string, pass: string) =>
    requestViaProxy({ host: p.status.ip!, port: 3128 }, `${target.url}/hello`, { auth: { user, pass } });

  beforeAll(async () => {
    target = await startEchoTarget();
    sm = await startSecretManagerEmulator({ pubsub, log: () => {} });
    const smEndpoint = `${sm.host}:${sm.port}`;
    secrets = createSecretManagerClient(smEndpoint);
    compute = await startComputeEmulator({
      bootDelayMs: 300,
      deleteDelayMs: 200,
      // VMs read the credentials version named in their metadata, with the real client (emulators/compute).
      secretManagerEndpoint: smEndpoint,
      addressRange: privateLoopbackRange(),
      log: instances.log,
    });
    plane = await startTestPlane({
      projectId,
      functions: ['reconcile', 'requeue', 'rotation'],
      scheduler: { start: true },
      env: {
        COMPUTE_EMULATOR_HOST: compute.endpoint,
        SECRET_MANAGER_EMULATOR_HOST: smEndpoint,
        // The sweep looks for due proxies five times a second (default once): each step of a replacement
        // (deleted, gone, created, running) waits for it, and none of them is what this file tests.
        REQUEUE_POLL_MS: '200',
        RECONCILE_PROVISIONING_POLL_MS: '500',
        RECONCILE_DELETION_POLL_MS: '500',
        RECONCILE_DRIFT_POLL_MS: '60000',
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
    await secrets?.close();
    await sm?.stop();
    await pubsub.close();
    await target?.close();
    await db?.terminate();
  });

  const create = async (name: string, spec: Record<string, unknown>) => {
    const res = await fetch(`${api.url}/v1/proxies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, spec: { mode: 'managed', zone: ZONE, ...spec } }),
    });
    expect(res.status).toBe(201);
  };

  let fleet: Record<string, ProxyResource>;

  it('provisions a fleet whose VMs read their credentials by reference', async () => {
    await makeSecret('creds-a', 'alice:first-Pa55');
    await makeSecret('creds-c', 'carol:steady-Pa55');
    await makeSecret('init-b', '#!/bin/sh\necho "boot v1"\n');
    await create('a1', { credentialsRef: { secret: 'creds-a' } });
    await create('a2', { credentialsRef: { secret: 'creds-a' } });
    await create('b', { cloudInit: { secretRef: { secret: 'init-b' } } });
    await create('c', { credentialsRef: { secret: 'creds-c' } });
    await create('d', { cloudInit: { inline: '#!/bin/sh\necho inline\n' } });
    fleet = {};
    for (const n of ['a1', 'a2', 'b', 'c', 'd']) fleet[n] = await ready(n);
    for (const i of compute.admin.instances({ project: projectId }))
      expect(i.proxy.url, i.name).not.toBeNull();
    expect((await through(fleet.a1!, 'alice', 'first-Pa55')).status).toBe(200);
    expect((await through(fleet.a1!, 'alice', 'wrong')).status).toBe(407);
    expect((await through(fleet.c!, 'carol', 'steady-Pa55')).status).toBe(200);
    // No credentials value in the documents: only references.
    const docs = (await db.collection('proxies').get()).docs.map((d) => JSON.stringify(d.data()));
    expect(docs.join('\n')).not.toMatch(/first-Pa55|steady-Pa55/);
  });

  const ops = () => {
    const c = compute.admin.counters();
    return { insert: c.insert, delete: c.delete };
  };
  /** Waits until the plane is quiet: no instance inserted or deleted for 3 s (bounded, 60 s). */
  const settle = () =>
    untilStable(ops, { quietMs: 3_000, timeoutMs: 60_000, what: 'instance inserts and deletes' });
  /** Positive evidence first: at least this many inserts and deletes since `from`. */
  const reached = (from: { insert: number; delete: number }, n: number) =>
    eventually(`${n} replacement(s) to finish`, () => {
      const c = ops();
      return c.insert - from.insert >= n && c.delete - from.delete >= n;
    });

  it('a new credentials version replaces a1 and a2 once each; the new VMs serve the new credentials', async () => {
    await settle();
    const from = instances.events.length;
    const before = compute.admin.counters();
    const version = await addVersion('creds-a', 'alice:second-Pa55');
    const a1 = await ready('a1', (p) => p.status.specHash !== fleet.a1!.status.specHash);
    const a2 = await ready('a2', (p) => p.status.specHash !== fleet.a2!.status.specHash);
    await reached(before, 2);
    await settle();
    expect(changedSince(from)).toEqual(replacedOnce('a1', 'a2'));
    expect((await through(a1, 'alice', 'second-Pa55')).status).toBe(200);
    expect((await through(a1, 'alice', 'first-Pa55')).status).toBe(407);
    expect((await through(a2, 'alice', 'second-Pa55')).status).toBe(200);
    expect((await through(fleet.c!, 'carol', 'steady-Pa55')).status).toBe(200);
    expect(jsonLines(functionLog(plane.logDir, 'rotation'))).toContainEqual(
      expect.objectContaining({
        message: 'secret changed: referencing proxies re-enqueued',
        secret: 'creds-a',
        version: version.split('/').pop(),
        proxies: ['a1', 'a2'],
      }),
    );
    fleet.a1 = a1;
    fleet.a2 = a2;
  });

  it('a new cloud-init version replaces b once and nothing else; a duplicate notification changes nothing', async () => {
    const from = instances.events.length;
    const before = compute.admin.counters();
    const version = await addVersion('init-b', '#!/bin/sh\necho "boot v2"\n');
    const b = await ready('b', (p) => p.status.specHash !== fleet.b!.status.specHash);
    await reached(before, 1);
    await settle();
    expect(changedSince(from)).toEqual(replacedOnce('b'));

    // Pub/Sub is at-least-once: the same notification again. Reconcile finds the hash unchanged.
    const passesOnB = () =>
      jsonLines(functionLog(plane.logDir, 'reconcile')).filter(
        (l) => l.message === 'reconcile pass' && l.proxy === 'b' && l.reason === 'secret-rotated',
      ).length;
    const passesBefore = passesOnB();
    const again = compute.admin.counters();
    const duplicate = await plane.publisher.publishRaw('secret-events', Buffer.from('{}'), {
      eventType: 'SECRET_VERSION_ADD',
      secretId: secretName('init-b'),
      versionId: version,
      dataFormat: 'JSON_API_V1',
    });
    await eventually('the duplicate to be fanned out', () =>
      jsonLines(functionLog(plane.logDir, 'rotation')).some(
        (l) => l.messageId === duplicate && l.count === 1,
      ),
    );
    // Positive evidence that reconcile acted on the re-enqueued request before judging "nothing changed".
    await eventually('reconcile to pass over b again', () => passesOnB() > passesBefore);
    expect(await settle()).toEqual({ insert: again.insert, delete: again.delete });
    expect((await doc('b')).status.specHash).toBe(b.status.specHash);
  });

  it('a newest credentials version disabled before reconcile reads it keeps the working VM serving (CloudInitError), never a VM that cannot read its credentials', async () => {
    // `latest` is the newest version whatever its state. The secret has no topics, so nothing is published
    // until the notification below: the version is added and disabled before reconcile can look.
    await secrets.createSecret({
      parent: `projects/${projectId}`,
      secretId: 'creds-e',
      secret: { replication: { automatic: {} } },
    });
    await addVersion('creds-e', 'erin:first-Pa55');
    await create('e', { credentialsRef: { secret: 'creds-e' } });
    const e = await ready('e');
    await settle();
    const from = instances.events.length;
    const before = compute.admin.counters();
    const version = await addVersion('creds-e', 'erin:second-Pa55');
    await secrets.disableSecretVersion({ name: version });
    await plane.publisher.publishRaw('secret-events', Buffer.from('{}'), {
      eventType: 'SECRET_VERSION_ADD',
      secretId: secretName('creds-e'),
      versionId: version,
      dataFormat: 'JSON_API_V1',
    });
    const failed = await eventually(
      'e to report the disabled version',
      async () => {
        const p = await doc('e');
        const c = p.status.conditions.find((x) => x.type === 'Provisioned');
        // Still Provisioned: the VM serves the version it booted with, which can be read (cloud-init-error.ts).
        return c?.status === 'True' && c.reason === 'CloudInitError' ? { p, c } : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(failed.c.message).toContain('failed_precondition');
    expect(failed.c.message).toContain(version);
    expect(await settle()).toEqual({ insert: before.insert, delete: before.delete });
    expect(instances.count('inserted', e.uid, from) + instances.count('deleted', e.uid, from)).toBe(0);
    expect(failed.p.status.providerId).toBe(e.status.providerId);
    expect(failed.p.status.specHash).toBe(e.status.specHash);
    expect(failed.p.status.servedCredentials).toEqual({ secret: 'creds-e', version: '1' });
    expect((await through(e, 'erin', 'first-Pa55')).status).toBe(200);
  });
});
