// The ProxyStore contract against the in-memory fake and the Firestore adapter on the emulator, plus what
// only Firestore can show: how a document reads in the console.
import { randomUUID } from 'node:crypto';
import { DocumentReference, Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { InvalidStoredProxy, StoreError } from '../../shared/src/ports/proxy-store.js';
import { InMemoryProxyStore } from '../../shared/src/testing/in-memory-proxy-store.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { proxyStoreContract } from '../../shared/src/testing/proxy-store-contract.js';
import { clearProject, testProjectId } from '../support/emulators.js';

proxyStoreContract('in-memory fake', async () => {
  let store = new InMemoryProxyStore();
  return {
    get store() {
      return store;
    },
    reset: async () => {
      store = new InMemoryProxyStore();
    },
  };
});

proxyStoreContract('Firestore adapter (emulator)', async () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  return {
    store: new FirestoreProxyStore(db),
    reset: () => clearProject(projectId),
    close: () => db.terminate(),
  };
});

describe('FirestoreProxyStore documents', () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  afterAll(() => db.terminate());

  it('stores spec and status as maps, dates as Timestamps and absent fields as null', async () => {
    await store.create(
      aProxy({ name: 'console', status: { nextReconcileAt: new Date('2026-01-01T00:00:05Z') } }),
    );
    const doc = (await db.doc('proxies/console').get()).data()!;
    expect(doc.createdAt).toBeInstanceOf(Timestamp);
    expect(doc.deletionRequestedAt).toBeNull();
    expect(doc.spec).toMatchObject({
      mode: 'managed',
      zone: 'us-central1-a',
      cloudInit: null,
      credentialsRef: null,
    });
    expect(doc.spec.healthCheck.url).toBeNull();
    expect(doc.status).toMatchObject({ phase: 'Pending', providerId: null, ip: null, specHash: '' });
    expect(doc.status.nextReconcileAt).toBeInstanceOf(Timestamp);
  });

  it('stores the routes a proxy is left out of only when there are any, and clears them', async () => {
    await store.create(aProxy({ name: 'targeted' }));
    const v1 = (await store.get('targeted'))!.version;
    const blocked = { ...aProxy().status, unreachableRoutes: ['news', 'shop'] };
    expect(await store.writeStatus('targeted', blocked, v1)).toBe('written');
    const read = (await store.get('targeted'))!;
    expect(read.proxy.status.unreachableRoutes).toEqual(['news', 'shop']);
    const { unreachableRoutes: _gone, ...cleared } = blocked;
    expect(await store.writeStatus('targeted', cleared, read.version)).toBe('written');
    const doc = (await db.doc('proxies/targeted').get()).data()!;
    expect(doc.status).not.toHaveProperty('unreachableRoutes');
    expect((await store.get('targeted'))!.proxy.status.unreachableRoutes).toBeUndefined();
  });

  it('a create whose commit the client retried after it landed finds its own document: created, not 409', async () => {
    // The Firestore client retries a commit whose answer was lost (UNAVAILABLE): the retry of a create that
    // landed meets ALREADY_EXISTS. Stood in for here: the create lands, then its caller is told code 6.
    const realCreate = DocumentReference.prototype.create;
    DocumentReference.prototype.create = async function (this: DocumentReference, ...args) {
      await realCreate.apply(this, args);
      throw Object.assign(new Error('6 ALREADY_EXISTS: the retry of a commit that landed'), { code: 6 });
    };
    const mine = aProxy({ name: 'retried-create' });
    try {
      await store.create(mine);
      // Another create of the name (another uid) is refused as ever.
      const err = await store.create(aProxy({ name: 'retried-create' })).catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: 'already_exists' });
    } finally {
      DocumentReference.prototype.create = realCreate;
    }
    expect((await store.get('retried-create'))?.proxy.uid).toBe(mine.uid);
  });

  it('reports a document that no longer fits the model as invalid, and lists skip it', async () => {
    await store.create(aProxy({ name: 'fine', spec: managedSpec() }));
    await db.doc('proxies/broken').set({ name: 'broken', spec: { mode: 'sideways' } });
    const err = await store.get('broken').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).kind).toBe('invalid');
    expect((await store.list()).map((p) => p.name)).toContain('fine');
    expect((await store.list()).map((p) => p.name)).not.toContain('broken');
  });
});

describe('FirestoreProxyStore on a document that does not fit the model', () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  afterAll(() => db.terminate());

  /** A proxy as stored, then hand-edited: a port of the wrong type holding something secret-looking. */
  const breakOne = async (name: string, edit: Record<string, unknown> = {}) => {
    const proxy = aProxy({ name });
    await store.create(proxy);
    await db.doc(`proxies/${name}`).update({ 'spec.port': 'hunter2', ...edit });
    return proxy;
  };
  const invalidOf = async (name: string) => {
    const err = await store.get(name).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidStoredProxy);
    return (err as InvalidStoredProxy).stored;
  };

  it('get() tells what could be read, which fields fail, and never the values', async () => {
    const { uid } = await breakOne('bad1', { 'status.phase': 'Sideways' });
    const stored = await invalidOf('bad1');
    expect(stored).toMatchObject({
      name: 'bad1',
      uid,
      generation: 1,
      deletionRequestedAt: null,
    });
    expect(stored.issues.map((i) => i.path)).toEqual(['spec.port', 'status.phase']);
    expect(stored.version).toMatch(/^\d+\.\d{9}$/);
    expect(JSON.stringify(stored)).not.toContain('hunter2');
  });

  it('a document copied under another id (a rename by hand) is not the proxy its name field says', async () => {
    const original = aProxy({ name: 'renamed-from' });
    await store.create(original);
    const data = (await db.doc('proxies/renamed-from').get()).data()!;
    await db.doc('proxies/renamed-to').set(data);
    const stored = await invalidOf('renamed-to');
    expect(stored).toMatchObject({ name: 'renamed-to', uid: original.uid });
    expect(stored.issues).toEqual([
      { path: 'name', code: 'custom', message: 'names another proxy than its document id renamed-to' },
    ]);
    const { proxies, skipped } = await store.listAll();
    expect(proxies.filter((p) => p.name === 'renamed-from')).toHaveLength(1);
    expect(skipped.map((s) => s.name)).toContain('renamed-to');
  });

  it('listAll() names the documents list() leaves out, with why', async () => {
    await store.create(aProxy({ name: 'fits' }));
    await breakOne('bad2');
    const { proxies, skipped } = await store.listAll();
    expect(proxies.map((p) => p.name)).toContain('fits');
    expect(skipped.find((s) => s.name === 'bad2')?.issues.map((i) => i.path)).toEqual(['spec.port']);
    expect((await store.list()).map((p) => p.name)).not.toContain('bad2');
  });

  it('listPage() counts a document it leaves out as read: the page names it, and the next starts after it', async () => {
    const paged = { attributes: { suite: 'paging' } };
    for (const name of ['pg-1', 'pg-2', 'pg-4']) {
      await store.create(aProxy({ name, spec: managedSpec({ attributes: paged.attributes }) }));
    }
    await breakOne('pg-3', { 'spec.attributes': paged.attributes });
    const first = await store.listPage(paged, { after: null, size: 3 });
    expect(first.proxies.map((p) => p.name)).toEqual(['pg-1', 'pg-2']);
    expect(first.skipped.map((s) => s.name)).toEqual(['pg-3']);
    expect(first.next).toBe('pg-3');
    const second = await store.listPage(paged, { after: first.next, size: 3 });
    expect(second).toMatchObject({
      proxies: [expect.objectContaining({ name: 'pg-4' })],
      skipped: [],
      next: null,
    });
  });

  it('requestDeletion() writes deletionRequestedAt alone, and deleteDocument() removes it at its version', async () => {
    await breakOne('bad3');
    const before = (await db.doc('proxies/bad3').get()).data()!;
    const at = new Date('2026-05-01T00:00:00Z');
    expect(await store.requestDeletion('bad3', at, (await invalidOf('bad3')).version)).toBe('written');
    const after = (await db.doc('proxies/bad3').get()).data()!;
    expect(after.deletionRequestedAt).toEqual(Timestamp.fromDate(at));
    expect({ ...after, deletionRequestedAt: null }).toEqual(before);
    const stored = await invalidOf('bad3');
    expect(stored.deletionRequestedAt).toEqual(at);
    expect(await store.deleteDocument('bad3', stored.version)).toBe('written');
    expect((await db.doc('proxies/bad3').get()).exists).toBe(false);
  });

  it('takes a deletionRequestedAt that is not a timestamp for none, and overwrites it', async () => {
    await breakOne('bad4', { deletionRequestedAt: 'yes please' });
    expect((await invalidOf('bad4')).deletionRequestedAt).toBeNull();
    const at = new Date('2026-05-02T00:00:00Z');
    expect(await store.requestDeletion('bad4', at)).toBe('written');
    expect((await invalidOf('bad4')).deletionRequestedAt).toEqual(at);
  });
});

describe('FirestoreProxyStore live set (the GC must never see a partial one)', () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  afterAll(() => db.terminate());

  it('keeps a document that fails the model in the live set, by its uid alone', async () => {
    await db.doc('proxies/odd').set({ name: 'odd', uid: 'uid-of-odd', spec: { mode: 'sideways' } });
    expect((await store.liveUids()).uids).toContain('uid-of-odd');
    await db.doc('proxies/odd').delete();
  });

  // The GC weighs orphans against the managed proxies whose VM its listing did not see: an external proxy
  // has none, and a mode that cannot be read counts as managed (it may have one).
  it('tells managed proxies from external ones by the raw mode, an unreadable mode counted managed', async () => {
    await db.doc('proxies/ext').set({ name: 'ext', uid: 'uid-of-ext', spec: { mode: 'external' } });
    await db.doc('proxies/mng').set({ name: 'mng', uid: 'uid-of-mng', spec: { mode: 'managed' } });
    await db.doc('proxies/odd').set({ name: 'odd', uid: 'uid-of-odd', spec: { mode: 'sideways' } });
    await db.doc('proxies/nospec').set({ name: 'nospec', uid: 'uid-of-nospec' });
    const live = await store.liveUids();
    for (const uid of ['uid-of-ext', 'uid-of-mng', 'uid-of-odd', 'uid-of-nospec'])
      expect(live.uids).toContain(uid);
    expect(live.managed).not.toContain('uid-of-ext');
    for (const uid of ['uid-of-mng', 'uid-of-odd', 'uid-of-nospec']) expect(live.managed).toContain(uid);
    for (const name of ['ext', 'mng', 'odd', 'nospec']) await db.doc(`proxies/${name}`).delete();
  });

  it('fails the live set rather than leave out a document without a uid', async () => {
    await store.create(aProxy({ name: 'whole' }));
    await db.doc('proxies/uidless').set({ name: 'uidless', spec: { mode: 'managed' } });
    const err = await store.liveUids().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).kind).toBe('invalid');
    expect((err as StoreError).message).toContain('proxies/uidless');
    await db.doc('proxies/uidless').delete();
  });
});

describe('FirestoreProxyStore holdsUid (one indexed lookup, what an unrecorded-instance request asks)', () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  const store = new FirestoreProxyStore(db);
  afterAll(() => db.terminate());

  it('finds the document holding a uid, and none for a uid nobody holds', async () => {
    const held = aProxy({ name: 'holder', uid: randomUUID() });
    await store.create(held);
    expect(await store.holdsUid(held.uid)).toBe(true);
    expect(await store.holdsUid(randomUUID())).toBe(false);
    await db.doc('proxies/holder').delete();
    expect(await store.holdsUid(held.uid)).toBe(false);
  });

  it('counts a document that no longer fits the model by its raw uid field, as the live set does', async () => {
    const uid = randomUUID();
    await db
      .doc('proxies/odd-holder')
      .set({ name: 'odd-holder', uid, spec: { mode: 'sideways' }, status: 7 });
    await expect(store.get('odd-holder')).rejects.toBeInstanceOf(InvalidStoredProxy);
    expect(await store.holdsUid(uid)).toBe(true);
    await db.doc('proxies/odd-holder').delete();
  });

  it('counts a document whose raw uid is the same instance spelled in capitals (a console edit)', async () => {
    const uid = randomUUID();
    await db.doc('proxies/caps-holder').set({ name: 'caps-holder', uid: uid.toUpperCase(), spec: {} });
    expect(await store.holdsUid(uid)).toBe(true);
    await db.doc('proxies/caps-holder').delete();
    expect(await store.holdsUid(uid)).toBe(false);
  });

  // Before uidKey the lookups matched the name characters as a prefix, so such a document held its
  // instance; confirmed with a uidKey that keyed only a whole UUID, it lost it (the request deleted the VM).
  it('counts a document whose raw uid a console edit cut short or lengthened, by its name characters', async () => {
    const uid = randomUUID();
    for (const stored of [uid.slice(0, 30), `${uid}0`]) {
      await db.doc('proxies/edited-holder').set({ name: 'edited-holder', uid: stored, spec: {} });
      expect(await store.holdsUid(uid)).toBe(true);
    }
    await db.doc('proxies/edited-holder').delete();
    expect(await store.holdsUid(uid)).toBe(false);
  });

  it('leaves a document without a uid, that records an instance in its status, its claim on it', async () => {
    const providerId = 'zones/us-central1-a/instances/pp-0123456789abcdef0123';
    await db.doc('proxies/uid-lost').set({ name: 'uid-lost', spec: {}, status: { providerId } });
    expect(await store.recordsInstance(providerId)).toBe(true);
    await db.doc('proxies/uid-lost').delete();
    expect(await store.recordsInstance(providerId)).toBe(false);
  });

  it('is not failed by a document without a uid, which claims no instance (liveUids fails on it)', async () => {
    const held = aProxy({ name: 'beside-uidless', uid: randomUUID() });
    await store.create(held);
    await db.doc('proxies/uidless-2').set({ name: 'uidless-2', spec: { mode: 'managed' } });
    expect(await store.holdsUid(held.uid)).toBe(true);
    expect(await store.holdsUid(randomUUID())).toBe(false);
    await db.doc('proxies/uidless-2').delete();
    await db.doc('proxies/beside-uidless').delete();
  });
});
