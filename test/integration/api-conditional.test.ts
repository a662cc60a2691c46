// Conditional requests on a proxy, through the real Firestore adapter on the emulator: every response that
// is one proxy carries `ETag: "<generation>.<uid>"`, and PUT/PATCH …/spec and DELETE take `If-Match` so that
// two admins never overwrite each other unknowingly — nor a proxy deleted and created again under the name. The precondition is checked on the same read the write is
// conditioned on: a write that lands between the check and the write makes the write a conflict, and the
// next attempt answers 412 (the store seam below forces that interleaving instead of hoping for it).
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { ObservedProxyStore } from '../../shared/src/testing/observed-proxy-store.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { testProjectId } from '../support/emulators.js';

const spec = (port: number) => ({ mode: 'external', endpoint: { host: 'h.example', port } });

describe('conditional requests (ETag / If-Match)', () => {
  const projectId = testProjectId('demo-apicond');
  const db = new Firestore({ projectId });
  const firestore = new FirestoreProxyStore(db);
  const store = new ObservedProxyStore(firestore);
  const publisher = new RecordingReconcilePublisher();
  let api: ApiServer;
  let n = 0;
  let name: string;
  let uid: string;
  /** The proxy's ETag at generation `g`. */
  const tag = (g: number, of = uid) => `"${g}.${of}"`;

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api.url}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const put = (port: number, ifMatch?: string) =>
    call('PUT', `/v1/proxies/${name}/spec`, spec(port), ifMatch === undefined ? {} : { 'if-match': ifMatch });
  const stored = async () => (await firestore.get(name))!;

  beforeAll(async () => {
    api = await startApiServer({
      deps: {
        version: 't',
        store,
        publisher,
        clock: systemClock,
        auth: openAuthenticator(),
        log: memoryLogger(),
      },
    });
  });

  afterAll(async () => {
    await api?.close();
    await db.terminate();
  });

  // Each test its own proxy at generation 1, nothing published yet.
  beforeEach(async () => {
    name = `cond-${++n}`;
    const res = await call('POST', '/v1/proxies', { name, spec: spec(3128) });
    expect(res.status).toBe(201);
    uid = ((await res.json()) as { uid: string }).uid;
    expect(res.headers.get('etag')).toBe(tag(1));
    publisher.published.length = 0;
  });

  it('gives the generation as a strong ETag on GET, PUT and PATCH', async () => {
    const get = await call('GET', `/v1/proxies/${name}`);
    expect(get.headers.get('etag')).toBe(tag(1));
    const changed = await put(3129);
    expect(changed.headers.get('etag')).toBe(tag(2));
    expect(((await changed.json()) as { generation: number }).generation).toBe(2);
    const same = await put(3129);
    expect(same.headers.get('etag')).toBe(tag(2));
    const patched = await call('PATCH', `/v1/proxies/${name}/spec`, { capacity: 9 });
    expect(patched.status).toBe(200);
    expect(patched.headers.get('etag')).toBe(tag(3));
    expect((await stored()).proxy.generation).toBe(3);
  });

  it('writes with the current generation in If-Match (or one of a list, or *)', async () => {
    expect((await put(3129, tag(1))).status).toBe(200);
    expect((await put(3130, `${tag(7)}, ${tag(2)}`)).status).toBe(200);
    const star = await put(3131, '*');
    expect(star.status).toBe(200);
    expect(star.headers.get('etag')).toBe(tag(4));
    expect((await stored()).proxy.spec).toMatchObject({ endpoint: { port: 3131 } });
    expect(publisher.published).toHaveLength(3);
  });

  it('refuses a stale If-Match with 412 and the current generation: nothing written, nothing published', async () => {
    expect((await put(3129)).status).toBe(200); // someone else's write: generation 2
    publisher.published.length = 0;
    const before = await stored();
    for (const [method, body] of [
      ['PUT', spec(3130)],
      ['PATCH', { capacity: 9 }],
    ] as const) {
      const res = await call(method, `/v1/proxies/${name}/spec`, body, { 'if-match': tag(1) });
      expect(res.status).toBe(412);
      expect(await res.json()).toEqual({
        error: 'precondition_failed',
        message: `proxy "${name}" is at ${tag(2)} (generation 2), not ${tag(1)}`,
        generation: 2,
        etag: tag(2),
      });
    }
    // Even a spec equal to the stored one: the precondition is checked before the change is.
    expect((await put(3129, tag(1))).status).toBe(412);
    const after = await stored();
    expect(after.version).toBe(before.version); // the document's update time
    expect(after.proxy).toEqual(before.proxy);
    expect(publisher.published).toEqual([]);
  });

  it('never matches a weak tag (strong comparison)', async () => {
    const res = await put(3129, `W/${tag(1)}`);
    expect(res.status).toBe(412);
    expect(((await res.json()) as { generation: number }).generation).toBe(1);
    expect((await stored()).proxy.generation).toBe(1);
  });

  it('answers a malformed If-Match with 400 invalid_request, nothing written', async () => {
    const before = await stored();
    for (const bad of ['1', '"1', '"1" "2"', '*, "1"', ',']) {
      const res = await put(3129, bad);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        error: 'invalid_request',
        issues: [{ path: 'If-Match', code: 'invalid_if_match' }],
      });
    }
    expect((await stored()).version).toBe(before.version);
    expect(publisher.published).toEqual([]);
  });

  it('answers 404 for a missing proxy whatever If-Match says (RFC 9110 §13.2.1: the 404 comes first)', async () => {
    expect((await put(3129)).status).toBe(200); // generation 2: "1" fails on a proxy that exists
    expect((await put(3130, tag(1))).status).toBe(412);
    for (const ifMatch of ['*', tag(1)]) {
      const res = await call('PUT', '/v1/proxies/no-such-proxy/spec', spec(1), { 'if-match': ifMatch });
      expect(res.status).toBe(404);
      const del = await call('DELETE', '/v1/proxies/no-such-proxy', undefined, { 'if-match': ifMatch });
      expect(del.status).toBe(404);
    }
  });

  it('conditions DELETE too: a stale If-Match deletes nothing; the current one requests deletion', async () => {
    expect((await put(3129)).status).toBe(200);
    publisher.published.length = 0;
    const stale = await call('DELETE', `/v1/proxies/${name}`, undefined, { 'if-match': tag(1) });
    expect(stale.status).toBe(412);
    expect((await stale.json()) as { generation: number }).toMatchObject({ generation: 2 });
    expect((await stored()).proxy.deletionRequestedAt).toBeNull();
    expect(publisher.published).toEqual([]);

    const current = await call('DELETE', `/v1/proxies/${name}`, undefined, { 'if-match': tag(2) });
    expect(current.status).toBe(202);
    expect(current.headers.get('etag')).toBe(tag(2));
    expect((await stored()).proxy.deletionRequestedAt).not.toBeNull();
    // Frozen now: a spec write answers 409 deletion_requested before If-Match is looked at.
    const frozen = await put(3130, tag(1));
    expect(frozen.status).toBe(409);
    expect(((await frozen.json()) as { error: string }).error).toBe('deletion_requested');
  });

  it('lets exactly one of two concurrent PUTs with the same If-Match win; the other gets 412', async () => {
    const [a, b] = await Promise.all([put(4001, tag(1)), put(4002, tag(1))]);
    expect([a.status, b.status].sort()).toEqual([200, 412]);
    const winner = a.status === 200 ? 4001 : 4002;
    const after = (await stored()).proxy;
    expect(after.generation).toBe(2);
    expect(after.spec).toMatchObject({ endpoint: { port: winner } });
    expect(publisher.published).toHaveLength(1);
  });

  it('checks If-Match on the read the write is conditioned on: a write landing in between makes it 412', async () => {
    // Someone else's spec write lands after the API checked If-Match "1" and before it writes.
    store.interceptNext('replaceSpec', async () => {
      const cur = await stored();
      expect(await firestore.replaceSpec(name, { ...cur.proxy.spec, capacity: 7 }, cur.version)).toBe(
        'written',
      );
    });
    const res = await put(4003, tag(1));
    expect(res.status).toBe(412);
    expect(((await res.json()) as { generation: number }).generation).toBe(2);
    expect((await stored()).proxy.spec).toMatchObject({ capacity: 7, endpoint: { port: 3128 } });
    expect(publisher.published).toEqual([]);
  });

  it('conditions the deletion write on that read too: a spec write in between makes DELETE 412', async () => {
    store.interceptNext('requestDeletion', async () => {
      const cur = await stored();
      expect(await firestore.replaceSpec(name, { ...cur.proxy.spec, capacity: 7 }, cur.version)).toBe(
        'written',
      );
    });
    const res = await call('DELETE', `/v1/proxies/${name}`, undefined, { 'if-match': tag(1) });
    expect(res.status).toBe(412);
    const after = (await stored()).proxy;
    expect(after.generation).toBe(2);
    expect(after.deletionRequestedAt).toBeNull();
    expect(publisher.published).toEqual([]);
  });

  it('a tag of a proxy deleted and created again under its name holds for neither write nor DELETE', async () => {
    const first = uid;
    expect((await call('DELETE', `/v1/proxies/${name}`)).status).toBe(202);
    // Reconcile's last step: the document goes, and the name is free.
    await db.collection('proxies').doc(name).delete();
    const again = await call('POST', '/v1/proxies', { name, spec: spec(4100) });
    expect(again.status).toBe(201);
    uid = ((await again.json()) as { uid: string }).uid;
    expect(uid).not.toBe(first);
    publisher.published.length = 0;
    // Both at generation 1: a client still holding the first one's tag (a retried DELETE, a stale script).
    for (const [method, path, body] of [
      ['DELETE', `/v1/proxies/${name}`, undefined],
      ['PUT', `/v1/proxies/${name}/spec`, spec(4101)],
      ['PATCH', `/v1/proxies/${name}/spec`, { capacity: 3 }],
    ] as const) {
      const res = await call(method, path, body, { 'if-match': tag(1, first) });
      expect(res.status, method).toBe(412);
      expect(await res.json()).toMatchObject({ generation: 1, etag: tag(1) });
    }
    const now = (await stored()).proxy;
    expect(now.deletionRequestedAt).toBeNull();
    expect(now.spec).toMatchObject({ endpoint: { port: 4100 } });
    expect(publisher.published).toEqual([]);
    // Its own tag holds.
    expect((await call('DELETE', `/v1/proxies/${name}`, undefined, { 'if-match': tag(1) })).status).toBe(202);
  });
});
