// Security of the discovery + lease API (brief invariants 6 and 7): without a valid token every route
// but /healthz is 401 and changes nothing; fuzzed bodies, ids and query strings get a 4xx with a stable
// code, never a 5xx, and write nothing.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { LEASE_COLLECTIONS } from '../../shared/src/adapters/firestore/lease-collections.js';
import { AcquireRequest, RenewRequest, ReportRequest } from '../../shared/src/domain/leases/wire.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, leaseTestApp, proxy, writeFleet } from '../support/leases.js';

const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKENS = [
  { name: 'current', token: 'current-token-0123456789' },
  { name: 'next', token: 'next-token-9876543210abc' },
];
const STABLE_CODES = new Set([
  'unauthenticated',
  'invalid_json',
  'invalid_request',
  'invalid_result',
  'unknown_lease',
  'not_found',
  'method_not_allowed',
  'payload_too_large',
  'unsupported_media_type',
]);

let api: LeaseApiRuntime;
let app: ReturnType<typeof leaseTestApp>['app'];
let leaseId: string;

beforeAll(async () => {
  await writeFleet(db, [
    proxy('a', { capacity: 5 }),
    proxy('b', { capacity: 5, attributes: { region: 'eu' } }),
  ]);
  const built = leaseTestApp({
    firestore: new Firestore({ projectId }),
    clock: systemClock,
    secrets: { access: async () => 'u:p' },
    lease: { tokens: TOKENS },
  });
  app = built.app;
  api = built.leases;
  const res = await app.request('/v1/leases', {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS[0]?.token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(res.status).toBe(201);
  leaseId = ((await res.json()) as { leaseId: string }).leaseId;
}, 60_000);

afterAll(async () => {
  await api.stop();
  await db.terminate();
});

/** Every document of the lease service with its update time: "nothing written" means this is unchanged. */
async function storedState(): Promise<string[]> {
  const out: string[] = [];
  for (const name of Object.values(LEASE_COLLECTIONS)) {
    const snap = await db.collection(name).get();
    for (const d of snap.docs)
      out.push(`${name}/${d.id}@${d.updateTime.toMillis()}.${d.updateTime.nanoseconds}`);
  }
  return out.sort();
}

/** mulberry32: a seeded generator, so a failing input can be replayed. */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fuzzer(seed: number) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const str = () =>
    pick([
      '',
      '*',
      'a b',
      '../x',
      '\u0000',
      'é'.repeat(300),
      'x'.repeat(70_000),
      '%00',
      '__proto__',
      'constructor',
      '<script>',
      'shop.example',
      String(r()),
    ]);
  const scalar = (): unknown =>
    pick([null, true, false, 0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, 300, 3601, 'ok', 'rate_limited', str()]);
  const value = (depth: number): unknown => {
    if (depth > 3 || r() < 0.4) return scalar();
    if (r() < 0.3) return Array.from({ length: Math.floor(r() * 4) }, () => value(depth + 1));
    const keys = ['selector', 'ttlSeconds', 'target', 'exclusive', 'result', 'region', '__proto__', str()];
    return Object.fromEntries(
      Array.from({ length: Math.floor(r() * 5) }, () => [pick(keys), value(depth + 1)]),
    );
  };
  const rawBody = (): string =>
    pick([
      () => JSON.stringify(value(0)),
      () => '{"selector":',
      () => '{"a":1}{"b":2}',
      () => String.fromCharCode(...Array.from({ length: 40 }, () => Math.floor(r() * 256))),
      () => `{"ttlSeconds":${'9'.repeat(400)}}`,
      () => `[${'['.repeat(5000)}`,
    ])();
  const contentType = () =>
    pick([
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      '',
    ]);
  const query = () =>
    Array.from({ length: Math.floor(r() * 4) }, () => {
      const k = pick([
        'attr.region',
        'attr.',
        'attr.a b',
        'healthy',
        'phase',
        'x',
        'attr.__proto__',
        'attr.k',
      ]);
      const v = pick(['eu', 'true', 'false', 'Ready', 'ready', '', '%ZZ', 'é', 'v'.repeat(300)]);
      return `${encodeURIComponent(k)}=${v === '%ZZ' ? v : encodeURIComponent(v)}`;
    }).join('&');
  const id = () =>
    pick([
      'AAAAAAAAAAAAAAAAAAAAAA',
      'x',
      '%2e%2e',
      'a%2Fb',
      '-'.repeat(64),
      '%00',
      'Z'.repeat(65),
      // A document id Firestore reserves: reading it fails (INVALID_ARGUMENT), it must still be a 404.
      '__aaaaaaaaaaaaaa__',
    ]);
  return { rawBody, contentType, query, id, pick };
}

const auth = { authorization: `Bearer ${TOKENS[1]?.token}` };

describe('authentication', () => {
  const routes: Array<[string, string]> = [
    ['GET', '/v1/proxies'],
    ['POST', '/v1/proxies'],
    ['GET', '/v1/proxies/a'],
    ['DELETE', '/v1/proxies/a'],
    ['POST', '/v1/proxies/a/reconcile'],
    ['GET', '/v1/proxies?healthy=true'],
    ['POST', '/v1/leases'],
    ['POST', '/v1/leases/ID/renew'],
    ['POST', '/v1/leases/ID/report'],
    ['DELETE', '/v1/leases/ID'],
    ['GET', '/openapi.json'],
    ['GET', '/metrics'],
  ];
  const badHeaders: Array<Record<string, string>> = [
    {},
    { authorization: '' },
    { authorization: 'Bearer' },
    { authorization: 'Bearer ' },
    { authorization: `Basic ${Buffer.from(`x:${TOKENS[0]?.token}`).toString('base64')}` },
    { authorization: `Bearer ${TOKENS[0]?.token.toUpperCase()}` },
    { authorization: `Bearer ${TOKENS[0]?.token}x` },
    { authorization: `Bearer ${TOKENS[0]?.token.slice(0, -1)}` },
    { authorization: `Bearer ${TOKENS[0]?.token} ${TOKENS[1]?.token}` },
    { authorization: 'Bearer current' },
    { authorization: `Bearer ${'x'.repeat(9000)}` },
  ];

  it('answers 401 on every route but /healthz without a valid token, and writes nothing', async () => {
    const before = await storedState();
    for (const [method, path] of routes) {
      for (const headers of badHeaders) {
        const body = method === 'POST' ? JSON.stringify({ result: 'banned' }) : undefined;
        const res = await app.request(path.replace('ID', leaseId), {
          method,
          headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
          body,
        });
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="proxyplane"');
        expect(await res.json()).toMatchObject({ error: 'unauthenticated' });
      }
    }
    expect((await app.request('/healthz')).status).toBe(200);
    expect(await storedState()).toEqual(before);
  });

  it('checks the token before the body: a 70 KB body without one is 401, not 413', async () => {
    const big = JSON.stringify({ target: 'x'.repeat(70_000) });
    for (const [method, path] of routes.filter(([m]) => m !== 'GET')) {
      for (const headers of [{}, { authorization: 'Bearer wrong-token-wrong-token' }] as Record<
        string,
        string
      >[]) {
        const res = await app.request(path.replace('ID', leaseId), {
          method,
          headers: { ...headers, 'content-type': 'application/json' },
          body: big,
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(await res.json()).toMatchObject({ error: 'unauthenticated' });
      }
    }
  });

  it('accepts every configured crawler token (so that one can rotate) and admin credentials', async () => {
    for (const token of [...TOKENS.map((t) => t.token), ADMIN_TOKEN]) {
      expect(
        (await app.request('/v1/proxies', { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(200);
      expect(
        (await app.request('/v1/proxies', { headers: { authorization: `bearer  ${token}` } })).status,
      ).toBe(200);
    }
  });
});

describe('fuzzed input', () => {
  it('bodies the schemas reject get a 4xx with a stable code, never a 5xx, and write nothing', {
    timeout: 120_000,
  }, async () => {
    const before = await storedState();
    const f = fuzzer(20261129);
    const schemas = { acquire: AcquireRequest, renew: RenewRequest, report: ReportRequest };
    let sent = 0;
    for (let i = 0; i < 400; i++) {
      const op = f.pick(['acquire', 'renew', 'report'] as const);
      const raw = f.rawBody();
      const type = f.contentType();
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = Symbol('not json');
      }
      // A body the schema accepts would be a legitimate request; here only rejects are sent.
      if (type.startsWith('application/json') && schemas[op].safeParse(parsed).success) continue;
      if (op !== 'acquire' && type === '' && raw === '') continue;
      const path = op === 'acquire' ? '/v1/leases' : `/v1/leases/${leaseId}/${op}`;
      const res = await app.request(path, {
        method: 'POST',
        headers: { ...auth, ...(type ? { 'content-type': type } : {}) },
        body: raw,
      });
      const body = (await res.json()) as { error: string };
      const what = `${op} ${type} ${raw.slice(0, 200)}`;
      expect(res.status, what).toBeGreaterThanOrEqual(400);
      expect(res.status, what).toBeLessThan(500);
      expect(STABLE_CODES.has(body.error), `${what} → ${body.error}`).toBe(true);
      sent++;
    }
    expect(sent).toBeGreaterThan(200);
    expect(await storedState()).toEqual(before);
  });

  it('a lone UTF-16 surrogate in a lease body string is 400 invalid_string, nothing written', async () => {
    const before = await storedState();
    const cases: Array<[string, string]> = [
      ['/v1/leases', '{"selector":{"region":"eu\\ud800"}}'],
      ['/v1/leases', '{"selector":{},"target":"example.com\\udc00"}'],
      [`/v1/leases/${leaseId}/report`, '{"result":"ok","target":"a\\ud800b"}'],
    ];
    for (const [path, body] of cases) {
      const res = await app.request(path, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body,
      });
      expect(res.status, body).toBe(400);
      expect(await res.json()).toMatchObject({
        error: 'invalid_request',
        issues: [{ code: 'invalid_string' }],
      });
    }
    expect(await storedState()).toEqual(before);
  });

  it('a body over 64 KiB is 413, with or without a Content-Length', async () => {
    const big = JSON.stringify({ target: 'x'.repeat(70_000) });
    const withLength = await app.request('/v1/leases', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'content-length': String(big.length) },
      body: big,
    });
    expect(withLength.status).toBe(413);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 70; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(1024)));
        controller.close();
      },
    });
    const chunked = await app.request('/v1/leases', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toMatchObject({ error: 'payload_too_large' });
  });

  it('query strings: each is a 200 or a 400 invalid_request, none is a 5xx', async () => {
    const f = fuzzer(7);
    const seen = { 200: 0, 400: 0 };
    for (let i = 0; i < 300; i++) {
      const qs = f.query();
      const res = await app.request(`/v1/proxies?${qs}`, { headers: auth });
      expect([200, 400], qs).toContain(res.status);
      seen[res.status as 200 | 400]++;
      if (res.status === 400)
        expect(((await res.json()) as { error: string }).error, qs).toBe('invalid_request');
      else await res.body?.cancel();
    }
    expect(seen[400]).toBeGreaterThan(50);
    expect(seen[200]).toBeGreaterThan(20);
  });

  it('fuzzed lease ids: 404 unknown_lease or an idempotent 204, never a 5xx, nothing written', async () => {
    const before = await storedState();
    const f = fuzzer(99);
    for (let i = 0; i < 60; i++) {
      const id = f.id();
      const del = await app.request(`/v1/leases/${id}`, { method: 'DELETE', headers: auth });
      expect([204, 404], id).toContain(del.status);
      for (const op of ['renew', 'report']) {
        const res = await app.request(`/v1/leases/${id}/${op}`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(op === 'report' ? { result: 'banned' } : {}),
        });
        expect(res.status, `${op} ${id}`).toBe(404);
        expect(STABLE_CODES.has(((await res.json()) as { error: string }).error)).toBe(true);
      }
    }
    expect(await storedState()).toEqual(before);
  });
});
