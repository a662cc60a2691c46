import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { bearerToken } from '../auth/authenticator.js';
import {
  type AuthFailureEnv,
  authFailureLimit,
  noteAuthFailure,
  noteAuthSuccess,
  refusalHeldBack,
} from './auth-failure-limit.js';

/**
 * A stand-in for the app: `x-auth` is what its authentication answers (ok, 401, 403 or 503, the last two
 * marked as authentication's own; ok notes the bearer token as accepted), counted in `checks`;
 * X-Forwarded-For carries the client address, one trusted hop as on Cloud Run. Under /open/ answers
 * without authenticating (a 404, /healthz-like route); `gate`, when set, holds every check until it settles.
 */
function app(opts: { logQuietMs?: number; maxKeys?: number } = {}) {
  let t = 0;
  let refused = 0;
  const checks: string[] = [];
  const log = memoryLogger();
  const limit = authFailureLimit({
    rate: { perSecond: 1, burst: 3 },
    now: () => t,
    trustedHops: 1,
    refused: () => refused++,
    log,
    logQuietMs: opts.logQuietMs,
    maxKeys: opts.maxKeys,
  });
  let gate: Promise<void> | undefined;
  const a = new Hono<AuthFailureEnv>();
  a.use(limit);
  a.get('/healthz', (c) => c.text('ok'));
  a.get('/v1/echo', (c) => c.text('echo'));
  a.all('/open/*', (c) => c.text('not found', 404));
  // like the fleet page's login form: checks a credential of its own (x-auth), not the bearer
  a.post('/login', (c) => {
    const held = refusalHeldBack(c);
    if (held) return held;
    const outcome = c.req.header('x-auth') ?? 'ok';
    checks.push(outcome);
    if (outcome === 'ok') return c.text('signed in');
    noteAuthFailure(c, 'unauthenticated', 'other'); // as fleet/auth.ts refuseLogin does
    return c.json({ error: 'x' }, 401);
  });
  a.all('*', async (c) => {
    const outcome = c.req.header('x-auth') ?? 'ok';
    checks.push(outcome);
    await gate;
    if (outcome === 'ok') noteAuthSuccess(c, bearerToken(c.req.header('authorization')));
    if (outcome === '403') noteAuthFailure(c, 'forbidden');
    if (outcome === '503') noteAuthFailure(c, 'unavailable');
    if (outcome === 'other-403') return c.json({ error: 'forbidden' }, 403); // not authentication's
    return outcome === 'ok' ? c.text('ok') : c.json({ error: 'x' }, Number(outcome) as 401);
  });
  const call = (from: string, auth = 'ok', path = '/v1/proxies', token?: string) =>
    a.request(path, {
      method: path === '/login' ? 'POST' : 'GET',
      headers: {
        'x-auth': auth,
        'x-forwarded-for': from,
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
    });
  return {
    call,
    hold: () => {
      let open!: () => void;
      gate = new Promise((r) => {
        open = r;
      });
      return open;
    },
    checks,
    log,
    limit,
    refused: () => refused,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('authFailureLimit', () => {
  it('lets the burst of failures through, then answers 429 with Retry-After before the credential is checked', async () => {
    const h = app();
    for (let i = 0; i < 3; i++) expect((await h.call('203.0.113.7', '401')).status).toBe(401);
    expect(h.checks).toHaveLength(3);
    const res = await h.call('203.0.113.7', '401');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toEqual({
      error: 'rate_limited',
      message: 'too many failed authentications from this address; retry after 1 s',
    });
    expect(h.checks).toHaveLength(3); // never looked at
    expect(h.refused()).toBe(1);
  });

  it('refuses a valid credential from that address too, unchecked, until a token is back', async () => {
    const h = app();
    for (let i = 0; i < 3; i++) await h.call('203.0.113.7', '401');
    expect((await h.call('203.0.113.7', 'ok')).status).toBe(429);
    expect(h.checks).toHaveLength(3);
    h.advance(1000);
    expect((await h.call('203.0.113.7', 'ok')).status).toBe(200);
    expect((await h.call('203.0.113.7', 'ok')).status).toBe(200); // a success spends nothing
    expect((await h.call('203.0.113.7', '401')).status).toBe(401);
    expect((await h.call('203.0.113.7', 'ok')).status).toBe(429);
  });

  it('spends nothing on successes, however many', async () => {
    const h = app();
    for (let i = 0; i < 20; i++) expect((await h.call('203.0.113.7')).status).toBe(200);
    expect(h.limit.limiter.size).toBe(0);
    for (let i = 0; i < 3; i++) expect((await h.call('203.0.113.7', '401')).status).toBe(401);
  });

  it("counts authentication's 403 and every 401, not a 503 (the check could not run) nor another 403", async () => {
    const h = app();
    for (let i = 0; i < 5; i++) expect((await h.call('203.0.113.7', '503')).status).toBe(503);
    for (let i = 0; i < 5; i++) expect((await h.call('203.0.113.7', 'other-403')).status).toBe(403);
    expect((await h.call('203.0.113.7', '403')).status).toBe(403);
    expect((await h.call('203.0.113.7', '401')).status).toBe(401);
    expect((await h.call('203.0.113.7', '403')).status).toBe(403);
    expect((await h.call('203.0.113.7', '401')).status).toBe(429);
  });

  it('keys on the address the trusted front end added: spoofed entries in front change nothing', async () => {
    const h = app();
    for (let i = 0; i < 3; i++) {
      expect((await h.call(`10.0.0.${i}, 198.51.100.${i}, 203.0.113.7`, '401')).status).toBe(401);
    }
    expect((await h.call('192.0.2.99, 203.0.113.7', '401')).status).toBe(429);
    expect((await h.call('203.0.113.8, 203.0.113.7', 'ok')).status).toBe(429);
    // …while the address put in front is a client of its own, untouched
    expect((await h.call('203.0.113.8', '401')).status).toBe(401);
    expect((await h.call('203.0.113.8', 'ok')).status).toBe(200);
  });

  it('gives an IPv6 client one bucket per /64, whichever address in it it picks', async () => {
    const h = app();
    for (let i = 1; i <= 3; i++) expect((await h.call(`2001:db8:1:2::${i}`, '401')).status).toBe(401);
    expect((await h.call('2001:db8:1:2:ffff::9', '401')).status).toBe(429);
    expect((await h.call('2001:db8:1:3::1', '401')).status).toBe(401);
  });

  it('never refuses /healthz or /v1/echo', async () => {
    const h = app();
    for (let i = 0; i < 3; i++) await h.call('203.0.113.7', '401');
    expect((await h.call('203.0.113.7', 'ok', '/healthz')).status).toBe(200);
    expect((await h.call('203.0.113.7', 'ok', '/v1/echo')).status).toBe(200);
    expect((await h.call('203.0.113.7', 'ok', '/v1/leases')).status).toBe(429);
  });

  it('logs one WARNING when it starts refusing, then at most one per quiet period, with the count left out', async () => {
    const h = app({ logQuietMs: 60_000 });
    for (let i = 0; i < 3; i++) await h.call('203.0.113.7', '401');
    for (let i = 0; i < 50; i++) expect((await h.call('203.0.113.7', '401')).status).toBe(429);
    for (let i = 0; i < 3; i++) await h.call('198.51.100.1', '401');
    for (let i = 0; i < 50; i++) expect((await h.call('198.51.100.1', '401')).status).toBe(429);
    const warned = () => h.log.lines.filter((r) => r.severity === 'WARNING');
    expect(warned()).toHaveLength(1);
    expect(warned()[0]).toMatchObject({
      message: 'refusing requests from an address that failed authentication too often',
      source: '203.0.113.7',
      limit: '1:3',
      refusedSinceLastLine: 0,
    });
    h.advance(60_000);
    for (let i = 0; i < 3; i++) await h.call('198.51.100.1', '401'); // refilled: spent again
    expect((await h.call('198.51.100.1', '401')).status).toBe(429);
    expect(warned()).toHaveLength(2);
    expect(warned()[1]).toMatchObject({ source: '198.51.100.1', refusedSinceLastLine: 99 });
    expect(h.refused()).toBe(101);
  });
});

describe('authFailureLimit and credentials accepted before', () => {
  const spend = async (h: ReturnType<typeof app>, from: string) => {
    for (let i = 0; i < 3; i++)
      expect((await h.call(from, '401', '/v1/proxies', `guess-${i}`)).status).toBe(401);
    expect((await h.call(from, '401', '/v1/proxies', 'guess-3')).status).toBe(429);
  };

  it("lets a credential accepted before through a shared address's empty bucket, checked as usual", async () => {
    const h = app();
    expect((await h.call('203.0.113.7', 'ok', '/v1/workers/w1/runtime', 'worker-token')).status).toBe(200);
    expect(h.limit.known.size).toBe(1);
    await spend(h, '203.0.113.7'); // a stranger behind the same NAT address
    const checked = h.checks.length;
    for (let i = 0; i < 5; i++) {
      expect((await h.call('203.0.113.7', 'ok', '/v1/workers/w1/runtime', 'worker-token')).status).toBe(200);
    }
    expect(h.checks.length).toBe(checked + 5); // each one checked: the credential is still verified
    // a credential this instance has not accepted yet waits for the bucket like any other, unchecked
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'new-token')).status).toBe(429);
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies')).status).toBe(429);
    expect(h.checks.length).toBe(checked + 5);
  });

  it('forgets a known credential once it is refused, and charges that failure to the address', async () => {
    const h = app();
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'rotated')).status).toBe(200);
    expect((await h.call('203.0.113.7', '401', '/v1/proxies', 'rotated')).status).toBe(401);
    expect(h.limit.known.size).toBe(0);
    for (let i = 0; i < 2; i++)
      expect((await h.call('203.0.113.7', '401', '/v1/proxies', 'rotated')).status).toBe(401);
    expect((await h.call('203.0.113.7', '401', '/v1/proxies', 'rotated')).status).toBe(429); // 3 spent
  });

  it('never remembers a credential that nothing checked: a guess sent to a route without authentication', async () => {
    const h = app();
    expect((await h.call('203.0.113.7', 'ok', '/open/x', 'guess')).status).toBe(404);
    expect((await h.call('203.0.113.7', 'ok', '/healthz', 'guess')).status).toBe(200);
    expect(h.limit.known.size).toBe(0);
    await spend(h, '203.0.113.7');
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'guess')).status).toBe(429);
  });

  it('charges every failure that was in flight at once: the address owes what overshot the bucket', async () => {
    const h = app();
    const open = h.hold();
    const inFlight = [0, 1, 2, 3, 4].map((i) => h.call('203.0.113.7', '401', '/v1/proxies', `guess-${i}`));
    await new Promise((r) => setImmediate(r));
    open();
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    const res = await h.call('203.0.113.7', '401');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3'); // burst 3 minus 5 failures: -2, one a second
    h.advance(2000);
    expect((await h.call('203.0.113.7', '401')).status).toBe(429);
    h.advance(1000);
    expect((await h.call('203.0.113.7', '401')).status).toBe(401);
    expect(h.checks).toHaveLength(6);
  });

  it('past maxKeys, new addresses share one bucket: spent ones are not evicted to make room', async () => {
    const h = app({ maxKeys: 2 });
    await spend(h, '198.51.100.1');
    await spend(h, '198.51.100.2');
    await spend(h, '198.51.100.3'); // the overflow bucket
    expect((await h.call('198.51.100.4', '401')).status).toBe(429); // shares it
    expect((await h.call('198.51.100.1', '401')).status).toBe(429); // still its own, still spent
    h.advance(3000);
    expect((await h.call('198.51.100.4', '401')).status).toBe(401); // refilled: room again
  });

  it('the pass is for the bearer alone: another credential the route checks (a login form) is refused unchecked', async () => {
    const h = app();
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'crawler-token')).status).toBe(200);
    await spend(h, '203.0.113.7');
    const checked = h.checks.length;
    for (let i = 0; i < 5; i++) {
      const res = await h.call('203.0.113.7', '401', '/login', 'crawler-token'); // guessing in the form
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
    }
    expect(h.checks.length).toBe(checked);
    expect(h.refused()).toBe(6); // spend()'s one and these five
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'crawler-token')).status).toBe(200); // still known
  });

  it("names the overflow bucket, not the newcomer's address, when new addresses share it", async () => {
    const h = app({ maxKeys: 1, logQuietMs: 0 });
    await spend(h, '198.51.100.1');
    await spend(h, '198.51.100.2'); // no room: the overflow bucket it spends is shared
    expect((await h.call('198.51.100.3', '401')).status).toBe(429); // with every newcomer
    const sources = h.log.lines.filter((r) => r.severity === 'WARNING').map((r) => r.source);
    expect(sources).toEqual(['198.51.100.1', 'overflow', 'overflow']);
  });

  it('a known token refused where it may not go (403), alternated with good uses, leaves no debt beyond empty', async () => {
    const h = app();
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'crawler-token')).status).toBe(200);
    await spend(h, '203.0.113.7');
    // The holder sends a refused use (403: it forgets the token) and a good one (it makes it known again)
    // together, over and over, both let through as known while the bucket is empty.
    for (let i = 0; i < 50; i++) {
      const open = h.hold();
      const pair = [
        h.call('203.0.113.7', '403', '/v1/admin-only', 'crawler-token'),
        h.call('203.0.113.7', 'ok', '/v1/proxies', 'crawler-token'),
      ];
      await new Promise((r) => setImmediate(r));
      open();
      expect((await Promise.all(pair)).map((r) => r.status)).toEqual([403, 200]);
    }
    // No debt was run up: a second later the next token is there for a newcomer, checked
    h.advance(1000);
    expect((await h.call('203.0.113.7', '401', '/v1/proxies', 'newcomer')).status).toBe(401);
  });

  it('a login form that fails does not make the bearer sent along unknown', async () => {
    const h = app();
    expect((await h.call('203.0.113.7', 'ok', '/v1/proxies', 'admin-token')).status).toBe(200);
    expect((await h.call('203.0.113.7', '401', '/login', 'admin-token')).status).toBe(401);
    expect(h.limit.known.size).toBe(1);
    expect((await h.call('203.0.113.7', '401', '/v1/proxies', 'admin-token')).status).toBe(401);
    expect(h.limit.known.size).toBe(0); // its own failure does
  });
});
