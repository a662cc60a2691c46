// A crawler token (DISCOVERY_TOKENS) on an admin-only route is a valid credential that may not be used
// there: 403 forbidden (RFC 6750 §3.1 insufficient_scope), not 401 unauthenticated as an unknown token.
// Every admin route family — /v1/proxies writes and reads by name, /v1/jobs, /v1/gateway, /fleet — on
// the real Firestore and Pub/Sub emulators: the refusal changes nothing and reads no body.

import type { DocumentReference } from '@google-cloud/firestore';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRAWLER_TOKEN_REFUSED } from '../../functions/api/src/discovery/auth.js';
import { InMemoryFleetFeed } from '../../functions/api/src/fleet/feed.js';
import {
  InMemoryJobRuns,
  InMemoryJobScheduler,
} from '../../functions/api/src/jobs/testing/in-memory-jobs.js';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { loadWorkersApiConfig } from '../../functions/api/src/workers/config.js';
import { buildWorkersApi } from '../../functions/api/src/workers/wiring.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { pubsubHost, releaseProject, testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, adminAuthenticator, leaseTestApp, proxy, writeFleet } from '../support/leases.js';

const projectId = testProjectId('demo-crawler-admin');
const db = new Firestore({ projectId });
const pubsub = createPubSub(projectId, `${pubsubHost().host}:${pubsubHost().port}`);
const CRAWLER = 'crawler-admin-routes-token-0123';
const crawler = { authorization: `Bearer ${CRAWLER}` };

const external = {
  mode: 'external',
  endpoint: { host: '127.0.0.9', port: 3128, protocol: 'http' },
  attributes: { region: 'eu' },
};
const json = 'application/json';

/** Every admin-only route, with a body that an admin's request would act on. */
const ROUTES: Array<[method: string, path: string, body?: unknown, type?: string]> = [
  ['GET', '/v1/proxies/a'],
  ['POST', '/v1/proxies', { name: 'new-one', spec: external }],
  ['PUT', '/v1/proxies/a/spec', { ...external, capacity: 9 }],
  ['PATCH', '/v1/proxies/a/spec', { capacity: 9 }, 'application/merge-patch+json'],
  ['DELETE', '/v1/proxies/a'],
  ['POST', '/v1/proxies/a/reconcile'],
  ['GET', '/v1/jobs'],
  ['GET', '/v1/jobs/gc-sweep'],
  ['POST', '/v1/jobs/gc-sweep:run'],
  ['POST', '/v1/jobs/gc-sweep:pause'],
  ['POST', '/v1/jobs/gc-sweep:resume'],
  ['GET', '/v1/gateway/workers'],
  ['GET', '/v1/gateway/ownership'],
  ['GET', '/v1/gateway/routing'],
  ['PUT', '/v1/gateway/routing', { routes: [{ match: '*', to: 'direct' }] }],
  ['POST', '/v1/gateway/reclaims/a', { ttlSeconds: 600 }],
  ['DELETE', '/v1/gateway/reclaims/a'],
  ['GET', '/fleet'],
  ['GET', '/fleet/api/state'],
  ['GET', '/fleet/api/proxies/a'],
  ['GET', '/fleet/proxies/a'],
  ['GET', '/fleet/events'],
];

let app: ReturnType<typeof leaseTestApp>['app'];
let leases: LeaseApiRuntime;
let publisher: ReturnType<typeof leaseTestApp>['publisher'];
let scheduler: InMemoryJobScheduler;

beforeAll(async () => {
  await writeFleet(db, [proxy('a', { capacity: 5 })]);
  scheduler = new InMemoryJobScheduler(['gc-sweep'], () => new Date('2026-03-01T00:00:00Z'));
  const log = memoryLogger();
  const built = leaseTestApp({
    firestore: new Firestore({ projectId }),
    clock: systemClock,
    secrets: { access: async () => 'u:p' },
    lease: { tokens: [{ name: 'c1', token: CRAWLER }] },
    extra: {
      jobs: { scheduler, runs: new InMemoryJobRuns() },
      fleet: new InMemoryFleetFeed(),
      workers: buildWorkersApi({
        firestore: new Firestore({ projectId }),
        pubsub,
        projectId,
        config: loadWorkersApiConfig({ WORKER_TOKENS: 'gw-1:worker-token-0123456789abc' }),
        adminAuth: adminAuthenticator(),
        clock: systemClock,
        log,
      }),
    },
  });
  app = built.app;
  leases = built.leases;
  publisher = built.publisher;
}, 60_000);

afterAll(async () => {
  await leases?.stop();
  await pubsub.close();
  await db.terminate();
  await releaseProject(projectId);
});

async function documents(refs: DocumentReference[], out: string[]): Promise<void> {
  for (const ref of refs) {
    const snap = await ref.get();
    if (snap.exists) out.push(`${ref.path}@${snap.updateTime?.toMillis()}.${snap.updateTime?.nanoseconds}`);
    for (const sub of await ref.listCollections()) await documents(await sub.listDocuments(), out);
  }
}

/** Everything the service could change: every Firestore document, reconcile requests, the jobs. */
async function state(): Promise<string[]> {
  const out: string[] = [];
  for (const c of await db.listCollections()) await documents(await c.listDocuments(), out);
  out.sort();
  out.push(`published:${JSON.stringify(publisher.published)}`);
  out.push(`jobs:${JSON.stringify([...scheduler.jobs.values()])} runs:${JSON.stringify(scheduler.runs)}`);
  return out;
}

function send(method: string, path: string, headers: Record<string, string>, body?: unknown, type = json) {
  return app.request(path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': type }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

describe('a crawler token on an admin-only route', () => {
  it('is 403 forbidden with the reason on every admin route family, and changes nothing', async () => {
    const before = await state();
    expect(before.some((d) => d.startsWith('proxies/a@'))).toBe(true);
    for (const [method, path, body, type] of ROUTES) {
      const res = await send(method, path, crawler, body, type);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(await res.json(), `${method} ${path}`).toEqual({
        error: 'forbidden',
        message: CRAWLER_TOKEN_REFUSED,
      });
      expect(res.headers.get('set-cookie'), `${method} ${path}`).toBeNull();
      // RFC 6750 §3.1: a valid credential without the scope, not a bad one.
      expect(res.headers.get('www-authenticate'), `${method} ${path}`).toBe(
        'Bearer realm="proxyplane", error="insufficient_scope"',
      );
    }
    expect(await state()).toEqual(before);
  });

  it('an unknown token, a missing one and a near-miss of the crawler token stay 401 unauthenticated', async () => {
    const before = await state();
    for (const headers of [
      { authorization: 'Bearer unknown-token-unknown-token' },
      { authorization: `Bearer ${CRAWLER}x` },
      { authorization: `Bearer ${CRAWLER.slice(0, -1)}` },
      { authorization: `Basic ${Buffer.from(`x:${CRAWLER}`).toString('base64')}` },
      {},
    ] as Array<Record<string, string>>) {
      for (const [method, path, body, type] of ROUTES) {
        const res = await send(method, path, headers, body, type);
        const what = `${method} ${path} ${JSON.stringify(headers)}`;
        expect(res.status, what).toBe(401);
        expect(res.headers.get('www-authenticate'), what).toBe('Bearer realm="proxyplane"');
        expect(await res.json(), what).toMatchObject({ error: 'unauthenticated' });
      }
    }
    expect(await state()).toEqual(before);
  });

  it('never reads the body of a request it refuses (auth before body)', async () => {
    /** A body that notes whether anything pulled a byte of it (highWaterMark 0: nothing is read ahead). */
    const probe = () => {
      const seen = { read: false };
      const stream = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            seen.read = true;
            controller.enqueue(new TextEncoder().encode(JSON.stringify({ name: 'x', spec: external })));
            controller.close();
          },
        },
        { highWaterMark: 0 },
      );
      return { seen, stream };
    };
    const request = (method: string, path: string, token: string, stream: ReadableStream) =>
      app.request(path, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': json },
        body: stream,
        duplex: 'half',
      } as RequestInit);
    for (const [method, path] of ROUTES.filter(([m]) => m !== 'GET')) {
      const { seen, stream } = probe();
      const res = await request(method, path, CRAWLER, stream);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(seen.read, `${method} ${path}`).toBe(false);
    }
    // The probe does notice a body that is read: the admin's request of the same kind reads it.
    const { seen, stream } = probe();
    expect((await request('POST', '/v1/proxies', ADMIN_TOKEN, stream)).status).toBe(201);
    expect(seen.read).toBe(true);
  });

  it('a 70 KB body with a crawler token is 403, not 413', async () => {
    const big = JSON.stringify({ name: 'big', spec: { ...external, attributes: { x: 'x'.repeat(70_000) } } });
    for (const [method, path] of ROUTES.filter(([m]) => m !== 'GET')) {
      const res = await app.request(path, {
        method,
        headers: { ...crawler, 'content-type': json },
        body: big,
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(await res.json()).toMatchObject({ error: 'forbidden' });
    }
  });

  it('the fleet page refuses it with its login form and the reason, and keeps no cookie', async () => {
    const html = await app.request('/fleet', { headers: { ...crawler, accept: 'text/html' } });
    expect(html.status).toBe(403);
    expect(await html.text()).toContain('this is a crawler token');
    const form = await app.request('/fleet/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${CRAWLER}`,
    });
    expect(form.status).toBe(403);
    expect(form.headers.get('set-cookie')).toBeNull();
    const page = await form.text();
    expect(page).toContain(
      'That token is refused: this is a crawler token; this route takes an admin credential.',
    );
    expect(page).toContain('<form method="post" action="/fleet/login">');
    // A browser (Accept: text/html) gets the form; a JSON client the error body.
    const query = await app.request(`/fleet?token=${CRAWLER}`, { headers: { accept: 'text/html' } });
    expect(query.status).toBe(403);
    expect(query.headers.get('set-cookie')).toBeNull();
    const queryPage = await query.text();
    expect(queryPage).toContain('this is a crawler token');
    expect(queryPage).toContain('<form method="post" action="/fleet/login">');
    const queryJson = await app.request(`/fleet?token=${CRAWLER}`);
    expect(queryJson.status).toBe(403);
    expect(queryJson.headers.get('set-cookie')).toBeNull();
    expect(await queryJson.json()).toMatchObject({ error: 'forbidden' });
    // An unknown token typed in is still just "not accepted".
    const unknown = await app.request('/fleet/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=unknown-token-unknown-token',
    });
    expect(unknown.status).toBe(401);
    expect(await unknown.text()).toContain('That token was not accepted.');
  });

  it('still opens discovery, leases and /openapi.json', async () => {
    expect((await send('GET', '/v1/proxies', crawler)).status).toBe(200);
    expect((await send('GET', '/openapi.json', crawler)).status).toBe(200);
    const lease = await send('POST', '/v1/leases', crawler, {});
    expect(lease.status).toBe(201);
  });
});
