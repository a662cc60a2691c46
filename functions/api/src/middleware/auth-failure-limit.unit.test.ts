import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { type AuthFailureEnv, authFailureLimit, noteAuthFailure } from './auth-failure-limit.js';

/**
 * A stand-in for the app: `x-auth` is what its authentication answers (ok, 401, 403 or 503, the last two
 * marked as authentication's own), counted in `checks`; X-Forwarded-For carries the client address, one
 * trusted hop as on Cloud Run.
 */
function app(opts: { logQuietMs?: number } = {}) {
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
  });
  const a = new Hono<AuthFailureEnv>();
  a.use(limit);
  a.get('/healthz', (c) => c.text('ok'));
  a.get('/v1/echo', (c) => c.text('echo'));
  a.all('*', (c) => {
    const outcome = c.req.header('x-auth') ?? 'ok';
    checks.push(outcome);
    if (outcome === '403') noteAuthFailure(c, 'forbidden');
    if (outcome === '503') noteAuthFailure(c, 'unavailable');
    if (outcome === 'other-403') return c.json({ error: 'forbidden' }, 403); // not authentication's
    return outcome === 'ok' ? c.text('ok') : c.json({ error: 'x' }, Number(outcome) as 401);
  });
  const call = (from: string, auth = 'ok', path = '/v1/proxies') =>
    a.request(path, { headers: { 'x-auth': auth, 'x-forwarded-for': from } });
  return {
    call,
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
