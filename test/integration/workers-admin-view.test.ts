// GET /v1/gateway/workers and /ownership against the Firestore emulator: by default they show what the
// snapshot pass sees (live workers and those lapsed within the view horizon), not every gateway instance
// ever started; `?all=true` lists every stored worker document, a page at a time, for finding an old one
// (the snapshot tick deletes those past retention: worker-retention.test.ts). What each request asks
// Firestore for is recorded (test/support/recording-firestore.ts), so a route that went back to reading
// every worker and header would fail here even where its answer stays the same.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { gatewayAdminRoutes } from '../../functions/api/src/workers/admin-routes.js';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreGatewayPoolReader } from '../../shared/src/adapters/firestore/snapshot-pool-reader.js';
import { FirestoreRoutingStore } from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { StoreError } from '../../shared/src/ports/proxy-store.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { testProjectId } from '../support/emulators.js';
import { gatewayAdminApp } from '../support/gateway-admin-app.js';
import { type FirestoreRead, recordingFirestore } from '../support/recording-firestore.js';
import { record, storeSnapshot } from '../support/worker-records.js';

const db = new Firestore({ projectId: testProjectId() });
// The routes read through a client that records what Firestore was asked for; the fixtures write directly.
const billed: FirestoreRead[] = [];
const viewed = recordingFirestore(db, billed);
const workers = new FirestoreWorkerStore(db);
const snapshots = new FirestoreSnapshotStore(db);
afterAll(() => db.terminate());

const T0 = new Date('2026-11-30T12:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const proxies = new FirestoreProxyStore(db);
const { app, passes } = gatewayAdminApp(db, { now: T0, reads: viewed });

const get = async (path: string) => {
  const res = await app.request(path);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const ids = (body: Record<string, unknown>) =>
  (body.workers as Array<{ workerId: string }>).map((w) => w.workerId).sort();

beforeAll(async () => {
  for (let i = 0; i < 12; i++) {
    const id = `gw-dead-${String(i).padStart(2, '0')}`;
    await workers.put(record(id, at(-2 * 3600 - i * 600)), null);
    await storeSnapshot(snapshots, id, 3, at(-2 * 3600 - i * 600 + 150));
  }
  await workers.put(record('gw-recent', at(-900)), null);
  await storeSnapshot(snapshots, 'gw-recent', 4, at(-800));
  await workers.put(record('gw-live', at(20)), null);
  await storeSnapshot(snapshots, 'gw-live', 9, at(170));
});

describe('GET /workers', () => {
  it('shows the live and recently lapsed workers by default, with their snapshots', async () => {
    const r = await get('/workers');
    expect(r.status).toBe(200);
    expect(ids(r.body)).toEqual(['gw-live', 'gw-recent']);
    expect(r.body.validAfter).toBe(at(-3600).toISOString());
    const live = (r.body.workers as Array<Record<string, unknown>>).find((w) => w.workerId === 'gw-live');
    expect(live).toMatchObject({ live: true, snapshot: { version: 9 } });
    const recent = (r.body.workers as Array<Record<string, unknown>>).find((w) => w.workerId === 'gw-recent');
    expect(recent).toMatchObject({ live: false, snapshot: { version: 4 } });
  });

  it('?all=true lists every stored worker document', async () => {
    const r = await get('/workers?all=true');
    expect(r.status).toBe(200);
    expect(ids(r.body)).toHaveLength(14);
    expect(r.body.validAfter).toBeNull();
    expect(r.body.nextPageToken).toBeNull();
    const dead = (r.body.workers as Array<Record<string, unknown>>).find((w) => w.workerId === 'gw-dead-11');
    expect(dead).toMatchObject({ live: false, snapshot: { version: 3 } });
  });

  it.each([
    'all=yes',
    'all=1',
    'all=',
    'all=true&pageSize=0',
    'all=true&pageSize=501',
    'all=true&pageSize=2.5',
    'all=true&pageToken=not%20a%20token',
    // Base64url, but of no document id Firestore can start after (a slash; nothing): its SDK throws on
    // them before any read, which was a 500 internal.
    'all=true&pageToken=YS9i', // "a/b"
    'all=true&pageToken=A', // ""
    'pageSize=5', // paging pages all=true only
    'all=false&pageToken=Z3ctYQ',
    'all=true&page=2',
  ])('?%s is a 400 with a stable code', async (q) => {
    const r = await get(`/workers?${q}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('?all=true pages: every worker once, in id order, each page reading at most its own documents', async () => {
    const seen: string[] = [];
    const pages: number[] = [];
    let token: string | null = null;
    do {
      const r = await readsOf(`/workers?all=true&pageSize=5${token ? `&pageToken=${token}` : ''}`);
      expect(r.status).toBe(200);
      const page = (r.body.workers as Array<{ workerId: string }>).map((w) => w.workerId);
      seen.push(...page);
      pages.push(page.length);
      // One more worker document than the page (to know whether another follows), and its headers by id.
      expect(r.docs).toBeLessThanOrEqual(5 + 1 + 5);
      token = r.body.nextPageToken as string | null;
    } while (token !== null);
    expect(pages).toEqual([5, 5, 4]);
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(14);
  });

  it('?all=true pages on past a document made by hand that ends a page (no worker id, no worker)', async () => {
    // Sorts right after gw-dead-03: the fifth document, the last of the first page of five.
    const byHand = db.collection('workers').doc('gw-dead-03 (copy)');
    await byHand.set({ note: 'made in the console' });
    try {
      const seen: string[] = [];
      let token: string | null = null;
      let pages = 0;
      do {
        const r = await get(`/workers?all=true&pageSize=5${token ? `&pageToken=${token}` : ''}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        seen.push(...(r.body.workers as Array<{ workerId: string }>).map((w) => w.workerId));
        token = r.body.nextPageToken as string | null;
        pages++;
      } while (token !== null && pages < 10);
      expect(token).toBeNull();
      expect(new Set(seen).size).toBe(14);
    } finally {
      await byHand.delete();
    }
  });
});

async function commitOwnership() {
  const store = new FirestoreOwnershipStore(db);
  const token = await store.acquireLock('setup', T0, at(60));
  if (!token) throw new Error('setup could not take the planner lock');
  const assign = (proxy: string, owner: string) => ({
    proxy,
    kind: 'assigned' as const,
    next: { proxy, owner, since: 1, drainEpoch: null },
  });
  const next = await store.commit(
    [assign('po-live', 'gw-live'), assign('po-dead', 'gw-dead-00')],
    1,
    token,
    T0,
  );
  await store.releaseLock('setup', next);
}

/** What one request asked Firestore for, in the workers and snapshots collections. */
async function readsOf(path: string) {
  billed.length = 0;
  const r = await get(path);
  const reads = billed.filter((b) => b.collection === 'workers' || b.collection === 'snapshots');
  return { ...r, reads, docs: reads.reduce((n, b) => n + b.docs, 0) };
}

describe('GET /ownership', () => {
  it('reads the workers and headers in view, never every instance ever started', async () => {
    await commitOwnership();
    const r = await readsOf('/ownership');
    expect(r.status).toBe(200);
    // Two in view (live, recent): one query each for workers and headers, plus the named-header get.
    expect(r.reads.filter((b) => b.how === 'scan')).toEqual([]);
    expect(r.reads.filter((b) => b.collection === 'workers').map((b) => b.docs)).toEqual([2]);
    expect(r.docs).toBeLessThanOrEqual(4);
    // The live owner's proxy is usable through its grant; the dead owner's shows its grant expired.
    const proxies = r.body.proxies as Array<Record<string, unknown>>;
    // (No report yet: the live owner's capacity is withheld for that reason, not for its grant.)
    expect(proxies.find((p) => p.proxy === 'po-live')).toMatchObject({
      owner: 'gw-live',
      reason: 'no_report',
    });
    expect(proxies.find((p) => p.proxy === 'po-dead')).toMatchObject({
      owner: 'gw-dead-00',
      usable: 0,
      reason: 'ownership_expired',
    });
  });

  it('?all=true reads one page of worker documents (in id order) and the headers of those, by id', async () => {
    const r = await readsOf('/workers?all=true&pageSize=10');
    const how = r.reads.map((b) => `${b.collection}:${b.how}:${b.docs}`);
    // The recorder counts an unfiltered query as a scan: this one is limited to the page (+1).
    expect(how.sort()).toEqual(['snapshots:getAll:10', 'workers:scan:11']);
  });
});

describe('reclaims', () => {
  const reclaims = new FirestoreReclaimStore(db);
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> | null };
  };
  const reclaimed = async () => (await reclaims.list(T0)).map((r) => r.proxy).sort();

  beforeAll(async () => {
    await proxies.create(aProxy({ name: 'rc-real' }));
  });

  it('refuses to reclaim a proxy that does not exist: 404, nothing written, no pass', async () => {
    passes.length = 0;
    const r = await send('POST', '/reclaims/never-existed', { ttlSeconds: 604_800 });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ error: 'not_found' });
    expect(await reclaimed()).not.toContain('never-existed');
    expect(passes).toEqual([]);
  });

  it('reclaims a proxy that exists, and deleting it asks for a pass once', async () => {
    passes.length = 0;
    expect((await send('POST', '/reclaims/rc-real', { ttlSeconds: 600 })).status).toBe(201);
    expect(await reclaimed()).toContain('rc-real');
    expect(passes).toEqual(['admin']);
    expect((await send('DELETE', '/reclaims/rc-real')).status).toBe(204);
    expect(await reclaimed()).not.toContain('rc-real');
    expect(passes).toEqual(['admin', 'admin']);
    // Nothing left to delete: still 204 (DELETE is idempotent), but no pass for a change that did not happen.
    expect((await send('DELETE', '/reclaims/rc-real')).status).toBe(204);
    expect((await send('DELETE', '/reclaims/never-existed')).status).toBe(204);
    expect(passes).toEqual(['admin', 'admin']);
  });

  it('refuses a body on DELETE, like every other DELETE, and keeps the reclaim', async () => {
    expect((await send('POST', '/reclaims/rc-real', { ttlSeconds: 600 })).status).toBe(201);
    passes.length = 0;
    const r = await send('DELETE', '/reclaims/rc-real', { force: true });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: 'invalid_request', issues: [{ code: 'unexpected_body' }] });
    expect(await reclaimed()).toContain('rc-real');
    expect(passes).toEqual([]);
  });

  it('refuses a query parameter it does not read (?dryRun=true), and changes nothing', async () => {
    const routing = new FirestoreRoutingStore(db);
    expect((await send('POST', '/reclaims/rc-real', { ttlSeconds: 600 })).status).toBe(201);
    const routingBefore = await routing.get();
    passes.length = 0;
    const refused = [
      await send('DELETE', '/reclaims/rc-real?dryRun=true'),
      await send('POST', '/reclaims/rc-real?dryRun=true', { ttlSeconds: 7200 }),
      await send('PUT', '/routing?dryRun=true', {
        routes: [{ name: 'dry', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' }],
      }),
      await send('GET', '/workers?al=true'),
      await send('GET', '/ownership?proxy=rc-real'),
    ];
    for (const r of refused) {
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({
        error: 'invalid_request',
        issues: [expect.objectContaining({ message: expect.stringMatching(/unknown query parameter/) })],
      });
    }
    expect(await reclaimed()).toContain('rc-real');
    expect((await reclaims.list(T0)).find((r) => r.proxy === 'rc-real')?.until).toEqual(at(600));
    expect(await routing.get()).toEqual(routingBefore);
    expect(passes).toEqual([]);
  });

  it('records the uid of the proxy it reclaims: a namesake created later is another proxy', async () => {
    expect((await send('POST', '/reclaims/rc-real', { ttlSeconds: 600 })).status).toBe(201);
    const uid = (await proxies.get('rc-real'))?.proxy.uid;
    expect(uid).toBeTruthy();
    expect((await reclaims.list(T0)).find((r) => r.proxy === 'rc-real')).toMatchObject({ uid });
  });

  it('refuses to reclaim a proxy being deleted: 409 deletion_requested, nothing written, no pass', async () => {
    await proxies.create(aProxy({ name: 'rc-going' }));
    await proxies.requestDeletion('rc-going', T0);
    passes.length = 0;
    const r = await send('POST', '/reclaims/rc-going', { ttlSeconds: 600 });
    expect(r).toMatchObject({ status: 409, body: { error: 'deletion_requested' } });
    expect(await reclaimed()).not.toContain('rc-going');
    expect(passes).toEqual([]);
  });

  it('answers a proxy whose stored document does not fit as the proxy routes do: 500 stored_proxy_invalid', async () => {
    await proxies.create(aProxy({ name: 'rc-broken' }));
    await db.collection('proxies').doc('rc-broken').update({ 'spec.mode': 7 });
    const r = await send('POST', '/reclaims/rc-broken', { ttlSeconds: 600 });
    expect(r).toMatchObject({ status: 500, body: { error: 'stored_proxy_invalid' } });
    expect(await reclaimed()).not.toContain('rc-broken');
  });

  it('answers 503 unavailable (not 500) when the proxy cannot be looked up, and writes nothing', async () => {
    const down = gatewayAdminRoutes({
      auth: openAuthenticator(),
      workers,
      ownership: new FirestoreOwnershipStore(db),
      snapshots,
      pool: new FirestoreGatewayPoolReader(db),
      routing: new FirestoreRoutingStore(db),
      reclaims,
      proxies: {
        get: async () => {
          throw new StoreError('unavailable', 'firestore is down');
        },
      },
      requester: { request: async () => {} },
      clock: new ManualClock(T0),
      log: memoryLogger(),
      settings: DEFAULT_WORKER_SETTINGS,
    });
    const res = await down.request('/reclaims/rc-down', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ttlSeconds: 600 }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
    expect(await reclaimed()).not.toContain('rc-down');
  });
});
