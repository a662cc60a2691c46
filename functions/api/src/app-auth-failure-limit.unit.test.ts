// The per-address limit on failed authentication (middleware/auth-failure-limit.ts) as the app mounts it:
// every place that checks a credential — the admin and crawler guards, the fleet page (header, cookie,
// `?token=`, its login form), /v1/gateway and the gateway workers' own routes — counts its refusals
// against the caller's address, and an address over the limit is refused 429 on all of them, its
// credential unchecked — unless one of those places accepted that bearer credential before. The address is
// X-Forwarded-For's last entry, as behind Cloud Run's front end.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { type Authenticator, openAuthenticator } from './auth/authenticator.js';
import { DEFAULT_CALLER_RATES } from './middleware/caller-rate-limit.js';
import { ADMIN_TOKEN, everySurface } from './testing/harness.js';
import { workerAuthenticator } from './workers/auth.js';
import type { WorkersApiDeps } from './workers/index.js';
import { RateLimiter } from './workers/rate-limit.js';

const CRAWLER = 'crawler-token-0123456789abcdef'; // everySurface's crawler token
const BAD = 'not-a-token-of-this-service-0123';
const FORM = 'application/x-www-form-urlencoded';

const WORKER = 'worker-token-gw-1-0123456789abcdef';

function limited(opts: { workerAuthOff?: boolean; adminAuthOff?: boolean } = {}) {
  let refused = 0;
  let checks = 0;
  const h0 = everySurface();
  // Counts the credential checks of the admin authenticator (every surface but the workers' uses it).
  const admin = opts.adminAuthOff ? openAuthenticator() : h0.deps.auth;
  const counted: Authenticator = {
    description: admin.description,
    authenticate: (token) => {
      checks++;
      return admin.authenticate(token);
    },
  };
  const h = everySurface({
    auth: counted,
    workers: {
      log: memoryLogger(),
      auth: workerAuthenticator({
        tokens: [{ workerId: 'gw-1', token: WORKER }],
        serviceAccounts: [],
        verifier: null,
        open: opts.workerAuthOff === true,
      }),
      adminAuth: counted,
      limiter: new RateLimiter(() => 0),
    } as unknown as WorkersApiDeps,
    callerLimit: { rates: DEFAULT_CALLER_RATES, now: () => 0 },
    authFailureLimit: {
      rate: { perSecond: 0.001, burst: 2 },
      now: () => 0,
      trustedHops: 1,
      refused: () => refused++,
    },
  });
  const send = (from: string, path: string, init: RequestInit = {}) =>
    h.app.request(path, {
      ...init,
      headers: { 'x-forwarded-for': `198.51.100.200, ${from}`, ...(init.headers ?? {}) },
    });
  return { ...h, send, refused: () => refused, checks: () => checks };
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

const SURFACES: Array<[string, string, RequestInit, number]> = [
  ['an admin route', '/v1/proxies/p1', bearer(BAD), 401],
  ['discovery (a crawler route)', '/v1/proxies', bearer(BAD), 401],
  ['a lease route', '/v1/leases/l1', bearer(BAD), 401],
  ['/metrics', '/metrics', bearer(BAD), 401],
  ['/openapi.json', '/openapi.json', bearer(BAD), 401],
  ['no credential at all', '/v1/jobs', {}, 401],
  ['a crawler token on an admin route (403)', '/v1/jobs', bearer(CRAWLER), 403],
  ['/v1/gateway', '/v1/gateway/workers', bearer(BAD), 401],
  ['the fleet page, a header', '/fleet/api/state', bearer(BAD), 401],
  ['the fleet page, its cookie', '/fleet/api/state', { headers: { cookie: `proxyplane_fleet=${BAD}` } }, 401],
  ['the fleet page, ?token=', `/fleet?token=${BAD}`, {}, 401],
  [
    'the fleet login form',
    '/fleet/login',
    { method: 'POST', headers: { 'content-type': FORM }, body: `token=${BAD}` },
    401,
  ],
  ['a gateway worker route', '/v1/workers/gw-1/snapshot', bearer(BAD), 401],
  // a valid worker credential for another worker's id: refused before that worker's bucket is taken
  ["a worker token on another worker's route (403)", '/v1/workers/gw-2/snapshot', bearer(WORKER), 403],
  [
    "a worker token registering another worker's id (403)",
    '/v1/workers/register',
    {
      method: 'POST',
      headers: { authorization: `Bearer ${WORKER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ workerId: 'gw-2', instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 }),
    },
    403,
  ],
];

describe('the app with the failed-authentication limit', () => {
  it.each(SURFACES.map((s, i) => [...s, `203.0.113.${i + 1}`] as const))(
    '%s: refusals count against the address; over the limit it is 429, the credential unchecked',
    async (_name, path, init, status, from) => {
      const h = limited();
      for (let i = 0; i < 2; i++) expect((await h.send(from, path, init)).status).toBe(status);
      const checked = h.checks();
      const res = await h.send(from, path, init);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
      expect(await res.json()).toMatchObject({ error: 'rate_limited' });
      expect(h.refused()).toBe(1);
      // refused before any authentication: not even the admin token is looked at now
      expect((await h.send(from, '/v1/proxies/p1', bearer(ADMIN_TOKEN))).status).toBe(429);
      expect(h.checks()).toBe(checked);
      // another address is untouched, and /healthz never refused
      expect((await h.send('192.0.2.1', '/v1/proxies/p1', bearer(ADMIN_TOKEN))).status).toBe(404);
      expect((await h.send(from, '/healthz')).status).toBe(200);
    },
  );

  it('spends nothing on authenticated requests, whatever they are answered', async () => {
    const h = limited();
    for (let i = 0; i < 10; i++) {
      expect((await h.send('203.0.113.50', '/v1/proxies/nope', bearer(ADMIN_TOKEN))).status).toBe(404);
      expect((await h.send('203.0.113.50', '/openapi.json', bearer(CRAWLER))).status).toBe(200);
    }
    expect((await h.send('203.0.113.50', '/v1/jobs', bearer(BAD))).status).toBe(401);
    expect((await h.send('203.0.113.50', '/v1/jobs', bearer(BAD))).status).toBe(401);
    expect((await h.send('203.0.113.50', '/v1/jobs', bearer(BAD))).status).toBe(429);
  });

  const crawlerLease = { method: 'POST', headers: { authorization: `Bearer ${CRAWLER}` }, body: '{' };
  it.each<[string, string, RequestInit, number]>([
    ['the admin guard', '/v1/proxies/p1', bearer(ADMIN_TOKEN), 404],
    ['the crawler guard (a lease route; the body refused after it)', '/v1/leases', crawlerLease, 415],
    ['the fleet page, by header', '/fleet/api/state', bearer(ADMIN_TOKEN), 200],
    [
      "a gateway worker's route (its query refused after it)",
      '/v1/workers/gw-1/snapshot',
      bearer(WORKER),
      400,
    ],
  ])(
    '%s makes the credential it accepted known: it then passes the address even when spent',
    async (_n, path, init, status) => {
      const h = limited();
      const from = '203.0.113.60';
      const first = (await h.send(from, path, init)).status;
      expect(first).toBe(status);
      for (let i = 0; i < 2; i++) expect((await h.send(from, '/v1/jobs', bearer(BAD))).status).toBe(401);
      expect((await h.send(from, '/v1/jobs', bearer(BAD))).status).toBe(429);
      expect((await h.send(from, path, init)).status).toBe(first);
      // a credential not accepted on this instance before is refused there, unchecked
      const unseen = path.startsWith('/v1/workers/') ? ADMIN_TOKEN : WORKER;
      expect((await h.send(from, path, bearer(unseen))).status).toBe(429);
    },
  );

  it.each<[string, string, RequestInit]>([
    [
      'the fleet login form',
      '/fleet/login',
      { method: 'POST', headers: { 'content-type': FORM }, body: `token=${BAD}` },
    ],
    ['the fleet page, ?token=', `/fleet?token=${BAD}`, {}],
  ])(
    '%s: a known bearer sent along does not get its own token checked past a spent bucket',
    async (_n, path, init) => {
      const h = limited();
      const from = '203.0.113.61';
      expect((await h.send(from, '/v1/proxies/p1', bearer(ADMIN_TOKEN))).status).toBe(404); // known now
      for (let i = 0; i < 2; i++) expect((await h.send(from, '/v1/jobs', bearer(BAD))).status).toBe(401);
      const checked = h.checks();
      const withBearer = {
        ...init,
        headers: { ...(init.headers ?? {}), authorization: `Bearer ${ADMIN_TOKEN}` },
      };
      for (let i = 0; i < 3; i++) expect((await h.send(from, path, withBearer)).status).toBe(429);
      expect(h.checks()).toBe(checked);
      expect((await h.send(from, '/v1/proxies/p1', bearer(ADMIN_TOKEN))).status).toBe(404); // the bearer's own pass
    },
  );

  it("with worker auth off (local mode), what the workers' routes accept unchecked does not become known", async () => {
    const h = limited({ workerAuthOff: true });
    const from = '203.0.113.62';
    const guess = 'a-guess-at-the-admin-token-0123';
    expect((await h.send(from, '/v1/workers/gw-1/snapshot', bearer(guess))).status).toBe(400); // past auth
    for (let i = 0; i < 2; i++) expect((await h.send(from, '/v1/jobs', bearer(BAD))).status).toBe(401);
    const checked = h.checks();
    expect((await h.send(from, '/v1/jobs', bearer(guess))).status).toBe(429);
    expect(h.checks()).toBe(checked);
  });

  it.each<[string, string]>([
    ['an admin route', '/v1/proxies/p1'],
    ['the fleet page', '/fleet/api/state'],
  ])(
    'with admin auth off (local mode), what %s accepts unchecked does not become known',
    async (_n, path) => {
      const h = limited({ adminAuthOff: true });
      const from = '203.0.113.63';
      const guess = 'a-guess-at-a-worker-token-01234';
      const first = (await h.send(from, path, bearer(guess))).status;
      expect([200, 404]).toContain(first); // accepted: auth is off
      for (let i = 0; i < 2; i++) {
        expect((await h.send(from, '/v1/workers/gw-1/snapshot', bearer(BAD))).status).toBe(401);
      }
      expect((await h.send(from, '/v1/workers/gw-1/snapshot', bearer(guess))).status).toBe(429);
    },
  );

  it('documents the 429 on the credentialed operations when only this limit is configured', async () => {
    const h = everySurface({
      authFailureLimit: { rate: { perSecond: 1, burst: 1 }, now: () => 0, trustedHops: 0 },
    });
    const doc = (await (await h.call('GET', '/openapi.json')).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    expect(doc.paths['/v1/proxies']!.post!.responses).toHaveProperty('429');
    expect(doc.paths['/v1/leases']!.post!.responses).toHaveProperty('429');
    expect(doc.paths['/healthz']!.get!.responses).not.toHaveProperty('429');
  });
});
