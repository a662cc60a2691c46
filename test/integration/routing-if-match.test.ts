// PUT /v1/gateway/routing with If-Match, against the Firestore emulator: the routing has a revision (its
// ETag) that every write bumps, and a PUT conditional on a revision writes only while the routing is still
// at it — so an edit made after the caller's read (`proxyplane routing apply`) is never overwritten
// unseen. The check runs in the store's transaction: of two PUTs built on one revision, exactly one wins.
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import {
  FirestoreRoutingStore,
  ROUTING_DOC,
} from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { gatewayAdminApp } from '../support/gateway-admin-app.js';
import { failNextCommitAfterLanding } from '../support/replayed-commit-firestore.js';

const projectId = testProjectId('demo-rim');
const db = new Firestore({ projectId });
afterAll(async () => {
  await db.terminate();
  await releaseProject(projectId);
});

const { app, passes } = gatewayAdminApp(db, { now: new Date('2026-12-02T03:00:00Z') });

const route = (name: string, host: string) => ({ name, match: { hosts: [host] }, policy: 'least-active' });

async function call(method: string, ifMatch?: string, routes?: unknown[]) {
  const res = await app.request('/routing', {
    method,
    headers: {
      ...(routes ? { 'content-type': 'application/json' } : {}),
      ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }),
    },
    ...(routes ? { body: JSON.stringify({ routes }) } : {}),
  });
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    body: (await res.json()) as Record<string, unknown>,
  };
}

const names = async () => ((await call('GET')).body.routes as Array<{ name: string }>).map((r) => r.name);

describe('the routing revision and If-Match on PUT /routing', () => {
  it('is 0 (ETag "0") while none is stored; each PUT that changes it bumps it by one', async () => {
    const none = await call('GET');
    expect(none).toMatchObject({ status: 200, etag: '"0"', body: { default: true, revision: 0 } });

    const first = await call('PUT', undefined, [route('a', '*')]);
    expect(first).toMatchObject({ status: 200, etag: '"1"', body: { revision: 1 } });
    expect(await call('GET')).toMatchObject({ etag: '"1"', body: { default: false, revision: 1 } });

    // The same routes again write nothing: the revision stands, and no snapshot pass re-plans and
    // re-publishes every worker's snapshot for it (a GitOps loop re-applying the routing, a retried PUT).
    passes.length = 0;
    const again = await call('PUT', undefined, [route('a', '*')]);
    expect(again).toMatchObject({ status: 200, etag: '"1"', body: { revision: 1 } });
    expect(await call('PUT', '"1"', [route('a', '*')])).toMatchObject({ status: 200, etag: '"1"' });
    expect(passes).toEqual([]);
    // A stale If-Match is refused first, whatever the body.
    expect((await call('PUT', '"0"', [route('a', '*')])).status).toBe(412);
    const changed = await call('PUT', undefined, [route('a', 'example.com')]);
    expect(changed).toMatchObject({ status: 200, etag: '"2"', body: { revision: 2 } });
    expect(passes).toEqual(['admin']);
  });

  it('writes when If-Match names the stored revision, refuses 412 with the current one otherwise', async () => {
    const { body } = await call('GET');
    const at = body.revision as number;
    passes.length = 0;

    const stale = await call('PUT', `"${at - 1}"`, [route('stale', '*')]);
    expect(stale).toMatchObject({
      status: 412,
      etag: `"${at}"`,
      body: { error: 'precondition_failed', revision: at },
    });
    // A weak tag never matches (strong comparison), even of the current revision.
    expect((await call('PUT', `W/"${at}"`, [route('weak', '*')])).status).toBe(412);
    expect(await names()).not.toContain('stale');
    expect(passes).toEqual([]);

    const ok = await call('PUT', `"${at - 1}", "${at}"`, [route('b', '*')]);
    expect(ok).toMatchObject({ status: 200, etag: `"${at + 1}"`, body: { revision: at + 1 } });
    expect(await names()).toEqual(['b']);
    expect(passes).toEqual(['admin']);
    expect((await call('PUT', '*', [route('c', '*')])).status).toBe(200);
  });

  it('"0" writes only over no routing at all: the first PUT of two racing ones', async () => {
    await db.collection(Collections.gatewayConfig).doc(ROUTING_DOC).delete();
    const results = await Promise.all([
      call('PUT', '"0"', [route('x', '*')]),
      call('PUT', '"0"', [route('y', '*')]),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 412]);
    const winner = results.find((r) => r.status === 200)!;
    expect(winner.body.revision).toBe(1);
    const loser = results.find((r) => r.status === 412)!;
    expect(loser.body).toMatchObject({ error: 'precondition_failed', revision: 1 });
    expect(await names()).toEqual([(winner.body.routes as Array<{ name: string }>)[0]!.name]);
  });

  it('counts a routing stored before revisions as revision 1, and a PUT fixes one that no longer parses', async () => {
    const doc = db.collection(Collections.gatewayConfig).doc(ROUTING_DOC);
    await doc.set({
      routes: [route('old', '*')],
      targetChecks: {},
      updatedAt: Timestamp.now(),
      updatedBy: 'before-revisions',
    });
    expect(await call('GET')).toMatchObject({ etag: '"1"', body: { revision: 1 } });
    // Out of shape (a route without a policy): GET cannot read it, but If-Match still sees its revision.
    await doc.set({ routes: [{ name: 'broken' }], updatedAt: Timestamp.now(), updatedBy: 'x', revision: 7 });
    // GET says so, with the revision a replacing PUT takes, rather than an opaque 500.
    expect(await call('GET')).toMatchObject({
      status: 500,
      etag: '"7"',
      body: { error: 'stored_routing_invalid', revision: 7 },
    });
    expect((await call('PUT', '"6"', [route('fixed', '*')])).status).toBe(412);
    expect(await call('PUT', '"7"', [route('fixed', '*')])).toMatchObject({
      status: 200,
      body: { revision: 8 },
    });
    expect(await names()).toEqual(['fixed']);
  });

  it('a PUT of the same routes over a stored document that does not parse writes it: the PUT is the fix', async () => {
    // Stored as the API stores it, then its updatedAt broken by hand (a console edit, a JSON restore).
    const stored = await call('PUT', undefined, [route('fixme', '*')]);
    expect(stored.status).toBe(200);
    const at = stored.body.revision as number;
    await db.collection(Collections.gatewayConfig).doc(ROUTING_DOC).update({ updatedAt: 'not a timestamp' });
    expect((await call('GET')).status).toBe(500);
    const fixed = await call('PUT', `"${at}"`, [route('fixme', '*')]);
    expect(fixed).toMatchObject({ status: 200, etag: `"${at + 1}"`, body: { revision: at + 1 } });
    expect(await call('GET')).toMatchObject({ status: 200, body: { revision: at + 1 } });
  });

  it('refuses a malformed If-Match (400 invalid_request), writing nothing', async () => {
    const before = await call('GET');
    const r = await call('PUT', '7', [route('z', '*')]);
    expect(r).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await call('GET')).toEqual(before);
  });
});

describe('a route host with a trailing dot', () => {
  it('is stored without it, whoever calls the store: earlier builds read no dotted name', async () => {
    await new FirestoreRoutingStore(db).put({
      routes: [{ ...route('dotted', 'shop.example.'), selector: {} } as never],
      updatedAt: new Date('2026-12-07T00:00:00Z'),
      updatedBy: 'test',
    });
    const doc = (await db.collection(Collections.gatewayConfig).doc(ROUTING_DOC).get()).data();
    expect(doc?.routes).toEqual([expect.objectContaining({ match: { hosts: ['shop.example'] } })]);
  });
});

// The client runs a transaction again when its commit landed but the call failed (DEADLINE_EXCEEDED, a last
// UNAVAILABLE): read as another writer's, the PUT's own routing answered 412 (with If-Match) or "unchanged"
// (without), and no snapshot pass was asked for — the gateways saw it only at the next tick.
describe('a routing PUT whose commit landed before its call failed', () => {
  const DEADLINE_EXCEEDED = 4;
  const UNAVAILABLE = 14;
  const landing = new Firestore({ projectId });
  afterAll(() => landing.terminate());
  const { app: landingApp, passes: landingPasses } = gatewayAdminApp(db, {
    now: new Date('2026-12-02T03:00:00Z'),
    routing: new FirestoreRoutingStore(landing),
  });
  const put = async (ifMatch: string | undefined, routes: unknown[]) => {
    const res = await landingApp.request('/routing', {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...(ifMatch ? { 'if-match': ifMatch } : {}) },
      body: JSON.stringify({ routes }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it.each([
    ['with If-Match', DEADLINE_EXCEEDED, true],
    ['without If-Match', UNAVAILABLE, false],
  ])('%s: answered written, at the revision it made, and a pass asked for', async (_, code, conditional) => {
    const at = (await call('GET')).body.revision as number;
    landingPasses.length = 0;
    failNextCommitAfterLanding(landing, code);
    const name = `landed-${code}`;
    const r = await put(conditional ? `"${at}"` : undefined, [route(name, '*')]);
    expect(r).toMatchObject({ status: 200, body: { revision: at + 1 } });
    expect(landingPasses).toEqual(['admin']);
    expect(await call('GET')).toMatchObject({ etag: `"${at + 1}"` });
    expect(await names()).toEqual([name]);
  });
});
