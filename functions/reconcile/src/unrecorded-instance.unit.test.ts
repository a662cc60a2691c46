// The unrecorded-instance request (unrecorded-instance.ts): one delete per delivery, redelivered by
// Pub/Sub (thrown) while the instance is still being created. The race that produces it runs against the
// real emulators in test/invariants/delete-during-create.test.ts.
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { instanceNameFromUid } from '../../../shared/src/domain/instance-name.js';
import { defaultPollIntervals } from '../../../shared/src/domain/reconcile/types.js';
import { ReconcileRequest } from '../../../shared/src/messages/reconcile-request.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { FakeProvider } from '../../../shared/src/testing/fake-provider.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { InMemoryReplacementSlots } from '../../../shared/src/testing/in-memory-replacement-slots.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import { handleReconcile, onReconcileEvent, type ReconcileDeps } from './handler.js';
import { noHealth } from './health-source.js';
import { TransientReconcileError } from './pass.js';
import { dropSuperseded } from './unrecorded-instance.js';

const zone = 'us-central1-a';

async function setup() {
  const store = new InMemoryProxyStore();
  const provider = new FakeProvider();
  provider.refuseDeletesWhileCreating = true;
  const clock = new ManualClock(new Date('2026-03-01T00:00:00Z'));
  const published: ReconcileRequest[] = [];
  const log = memoryLogger();
  const deps: ReconcileDeps = {
    store,
    providers: new Map([['gce', provider]]),
    cloudInit: {
      resolve: async () => ({ ok: true, script: '#!/bin/sh\n', digest: 'sha256:x', credentialsSecret: null }),
      versionState: async () => 'readable',
    },
    health: noHealth,
    clock,
    intervals: defaultPollIntervals,
    publisher: { publish: async (r) => void published.push(r) },
    log,
    maxPasses: 6,
    slots: new InMemoryReplacementSlots(0, clock),
  };
  // An instance whose proxy is gone: created by a delivery, never recorded.
  const uid = randomUUID();
  const { providerId } = await provider.create({
    name: instanceNameFromUid(uid),
    proxyName: 'gone',
    uid,
    zone,
    machineType: 'e2-small',
    image: 'debian-12',
    port: 3128,
    protocol: 'http',
    startupScript: '',
    credentialsSecret: null,
    specHash: 'h',
  });
  const request: ReconcileRequest = {
    proxy: 'gone',
    reason: 'unrecorded-instance',
    instance: { provider: 'gce', providerId, uid },
  };
  return { store, provider, deps, log, request, uid, providerId, published };
}

describe('unrecorded-instance requests', () => {
  it('throw (Pub/Sub redelivers) while the instance is being created, delete it once it is', async () => {
    const t = await setup();
    await expect(handleReconcile(t.deps, t.request)).rejects.toBeInstanceOf(TransientReconcileError);
    expect(t.provider.instances.get(t.providerId)?.deletingFor).toBeNull();
    t.provider.bootAll();
    await expect(handleReconcile(t.deps, t.request)).resolves.toEqual({ passes: 0, last: 'not-found' });
    expect(t.provider.instances.get(t.providerId)?.deletingFor).not.toBeNull();
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({ event: 'reconcile.unrecorded_instance_deleted', uid: t.uid }),
    );
    // A duplicate delivery: the delete is asked again, idempotently.
    await expect(handleReconcile(t.deps, t.request)).resolves.toMatchObject({ passes: 0 });
    expect(t.provider.callsOf('create')).toBe(1);
  });

  it('leave an instance whose uid a document holds to that proxy', async () => {
    const t = await setup();
    t.provider.bootAll();
    await t.store.create(aProxy({ name: 'gone', uid: t.uid }));
    await handleReconcile(t.deps, t.request);
    expect(t.provider.callsOf('delete')).toBe(0);
  });

  // Any publisher of the topic can send one: the request deletes only what the plane itself says is an
  // unrecorded instance, so a wrong or forged one never takes a live proxy's VM or one the plane did not make.
  it('leave an instance whose uid a document holds under another name to that proxy', async () => {
    const t = await setup();
    t.provider.bootAll();
    await t.store.create(aProxy({ name: 'live', uid: t.uid }));
    await expect(handleReconcile(t.deps, t.request)).resolves.toMatchObject({ passes: 0 });
    expect(t.provider.callsOf('delete')).toBe(0);
  });

  // The instance's name keeps only the uid's first 20 hex digits, lowercased (instance-name.ts): a request
  // whose uid is a live proxy's in capitals, or with its last 12 digits changed, still names that proxy's
  // instance. Comparing the uid as a string would find no document and delete the live VM.
  it("leave a live proxy's instance alone when the request spells its uid another way", async () => {
    const t = await setup();
    t.provider.bootAll();
    await t.store.create(aProxy({ name: 'live', uid: t.uid }));
    const variants = [t.uid.toUpperCase(), `${t.uid.slice(0, 24)}000000000000`];
    for (const uid of variants) {
      expect(uid).not.toBe(t.uid);
      const request = { ...t.request, instance: { ...t.request.instance!, uid } };
      expect(ReconcileRequest.safeParse(request).success).toBe(true);
      await expect(handleReconcile(t.deps, request)).resolves.toMatchObject({ passes: 0 });
    }
    expect(t.provider.callsOf('delete')).toBe(0);
  });

  // A document whose status records the instance owns it whatever its uid says (one that lost its uid
  // field in a console edit holds no uid, but its status still names its VM): its passes decide.
  it('leave an instance a document records as its own to that proxy, whatever its uid', async () => {
    const t = await setup();
    t.provider.bootAll();
    await t.store.create(aProxy({ name: 'recorder', uid: randomUUID() }));
    const read = (await t.store.get('recorder'))!;
    const status = { ...read.proxy.status, providerId: t.providerId };
    expect(await t.store.writeStatus('recorder', status, read.version)).toBe('written');
    await expect(handleReconcile(t.deps, t.request)).resolves.toMatchObject({ passes: 0 });
    expect(t.provider.callsOf('delete')).toBe(0);
  });

  it('delete nothing when the providerId is not the instance the uid names', async () => {
    const t = await setup();
    t.provider.bootAll();
    const other = await t.provider.create({
      ...t.provider.instances.get(t.providerId)!.request,
      name: 'db-primary',
    });
    const request = { ...t.request, instance: { ...t.request.instance!, providerId: other.providerId } };
    await expect(handleReconcile(t.deps, request)).resolves.toMatchObject({ passes: 0 });
    expect(t.provider.callsOf('delete')).toBe(0);
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'unrecorded-instance request refused: its providerId is not the instance its uid names',
      }),
    );
  });

  it('are acknowledged, left to the GC, when the delete fails for good; thrown when it fails in passing', async () => {
    const t = await setup();
    t.provider.bootAll();
    t.provider.failNext('delete', 'transient');
    await expect(handleReconcile(t.deps, t.request)).rejects.toBeInstanceOf(TransientReconcileError);
    t.provider.failNext('delete', 'permanent');
    await expect(handleReconcile(t.deps, t.request)).resolves.toMatchObject({ passes: 0 });
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({
        message: 'could not delete an instance its deleted proxy never recorded; the orphan GC will',
      }),
    );
  });

  // Up to ~15 deliveries per instance: each asks about its one uid, never reads the uid of every proxy
  // (liveUids, the GC's live set).
  it('ask whether a document holds the one uid, without reading every document', async () => {
    const t = await setup();
    t.provider.bootAll();
    t.store.liveUids = async () => {
      throw new Error('a full scan of the proxies collection');
    };
    await t.store.create(aProxy({ name: 'other' }));
    await expect(handleReconcile(t.deps, t.request)).resolves.toMatchObject({ passes: 0 });
    expect(t.provider.instances.get(t.providerId)?.deletingFor).not.toBeNull();
  });

  it('are taken with a field this version does not know beside the instance (a newer publisher)', async () => {
    const t = await setup();
    t.provider.bootAll();
    const data = Buffer.from(JSON.stringify({ ...t.request, attempt: 2 })).toString('base64');
    await onReconcileEvent(t.deps, { data: { message: { data, messageId: 'm1' } } });
    expect(t.provider.instances.get(t.providerId)?.deletingFor).not.toBeNull();
    expect(t.log.lines).toContainEqual(
      expect.objectContaining({ event: 'pubsub.unknown_fields', fields: ['attempt'], severity: 'WARNING' }),
    );
  });

  it('carry the instance with that reason, and only with it', () => {
    const instance = { provider: 'gce', providerId: `zones/${zone}/instances/x`, uid: randomUUID() };
    expect(ReconcileRequest.safeParse({ proxy: 'p', reason: 'unrecorded-instance', instance }).success).toBe(
      true,
    );
    expect(ReconcileRequest.safeParse({ proxy: 'p', reason: 'unrecorded-instance' }).success).toBe(false);
    expect(ReconcileRequest.safeParse({ proxy: 'p', reason: 'requeue', instance }).success).toBe(false);
  });
});

describe('dropSuperseded', () => {
  it("keeps the instance of the uid the document holds spelt another way (a console edit's case), and drops one of another uid", async () => {
    const { deps, log, provider, uid, providerId } = await setup();
    const other = randomUUID();
    const { providerId: otherId } = await provider.create({
      ...provider.instances.get(providerId)!.request,
      name: instanceNameFromUid(other),
      uid: other,
    });
    const created = new Map([
      [uid, { provider: 'gce', providerId, uid }],
      [other, { provider: 'gce', providerId: otherId, uid: other }],
    ]);
    await dropSuperseded(deps, log, 'gone', created, uid.toUpperCase());
    expect(provider.calls.filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', providerId: otherId }]);
  });

  // The same rule as the request's (and the GC's): a document that holds the instance's uid under another
  // name, or records it in its status whatever uid it holds, owns it — deleting it took a live proxy's VM.
  it.each([
    ['holds its uid under another name', 'holds'],
    ['records it in its status, under another uid', 'records'],
  ] as const)('keeps an instance of another uid that a document %s', async (_what, how) => {
    const { deps, log, provider, store, uid, providerId } = await setup();
    const owner = aProxy({ name: 'owner', uid: how === 'holds' ? uid : randomUUID() });
    await store.create(how === 'records' ? { ...owner, status: { ...owner.status, providerId } } : owner);
    await dropSuperseded(deps, log, 'gone', new Map([[uid, { provider: 'gce', providerId, uid }]]), null);
    expect(provider.callsOf('delete')).toBe(0);
  });

  it('drops nothing when it cannot tell whether a document owns the instance (never guess)', async () => {
    const { deps, log, provider, store, uid, providerId } = await setup();
    store.recordsInstance = async () => {
      throw new Error('firestore unavailable');
    };
    await dropSuperseded(deps, log, 'gone', new Map([[uid, { provider: 'gce', providerId, uid }]]), null);
    expect(provider.callsOf('delete')).toBe(0);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'could not tell whether a proxy owns an instance this delivery created; the orphan GC will',
        providerId,
      }),
    );
  });

  // Past the delivery's pass-start budget a delete (up to ~2 minutes of retries under a slow Compute API)
  // would run into the function's timeout: the delete goes to the instance's own request, one publish,
  // whose delivery looks ownership up and deletes.
  it.each([
    ['when it is reached past its budget', [false]],
    ['when its ownership lookups end past its budget', [true, false]],
  ] as const)('hands the delete to a request of its own, none inline, %s', async (_when, answers) => {
    const { deps, log, provider, uid, providerId, published, request } = await setup();
    const inTime = [...answers];
    const created = new Map([[uid, { provider: 'gce', providerId, uid }]]);
    await dropSuperseded(deps, log, 'gone', created, null, () => ((inTime.shift() ?? false) ? 10_000 : 0));
    expect(inTime).toEqual([]);
    expect(provider.callsOf('delete')).toBe(0);
    expect(published).toEqual([request]);
    expect(log.lines).toContainEqual(
      expect.objectContaining({ event: 'reconcile.unrecorded_instance_handed_off', providerId }),
    );
  });

  // Firestore degraded: the ownership lookups (up to 8 parallel queries, then one more) retried by its
  // client for minutes. Checked against the budget only before they began, they ran the delivery into the
  // function's timeout; they are given up when the budget is spent, and the instance handed off as past it.
  it.each([
    ['holdsUid', 'holdsUid'],
    ['recordsInstance', 'recordsInstance'],
  ] as const)(
    'hands the delete off when the %s lookup does not answer within the budget',
    async (_what, lookup) => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      try {
        const { deps, log, provider, store, uid, providerId, published, request } = await setup();
        store[lookup] = () => new Promise(() => {}); // never answered
        const start = Date.now();
        const budgetLeft = () => 40_000 - (Date.now() - start);
        let settled = false;
        const created = new Map([[uid, { provider: 'gce', providerId, uid }]]);
        const dropping = dropSuperseded(deps, log, 'gone', created, null, budgetLeft).finally(() => {
          settled = true;
        });
        await vi.advanceTimersByTimeAsync(40_000);
        expect(settled).toBe(true);
        await dropping;
        expect(provider.callsOf('delete')).toBe(0);
        expect(published).toEqual([request]);
        expect(log.lines).toContainEqual(
          expect.objectContaining({ event: 'reconcile.unrecorded_instance_handed_off', providerId }),
        );
      } finally {
        vi.useRealTimers();
      }
    },
  );

  it('logs an ERROR and deletes nothing when the late hand-off cannot be published', async () => {
    const { deps, log, provider, uid, providerId } = await setup();
    deps.publisher = {
      publish: async () => {
        throw new Error('pubsub unavailable');
      },
    };
    const created = new Map([[uid, { provider: 'gce', providerId, uid }]]);
    await dropSuperseded(deps, log, 'gone', created, null, () => 0);
    expect(provider.callsOf('delete')).toBe(0);
    expect(log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'ERROR',
        message: 'could not hand off the delete of an instance this delivery created; the orphan GC will',
        providerId,
        error: expect.anything(),
      }),
    );
    expect(log.lines).not.toContainEqual(
      expect.objectContaining({ event: 'reconcile.unrecorded_instance_handed_off' }),
    );
  });
});
