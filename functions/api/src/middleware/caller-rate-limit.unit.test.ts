import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/authenticator.js';
import {
  CALLER_CLASSES,
  type CallerClass,
  type CallerRates,
  callerClass,
  callerRateLimit,
  DEFAULT_CALLER_RATES,
  rateEnvName,
} from './caller-rate-limit.js';

const rates: CallerRates = {
  'lease-acquire': { perSecond: 2, burst: 3 },
  'lease-other': { perSecond: 1, burst: 1 },
  discovery: { perSecond: 1, burst: 1 },
  'admin-write': { perSecond: 1, burst: 1 },
  'admin-read': { perSecond: 1, burst: 1 },
};

/** A stand-in for the authenticated app: `x-who` is the principal (none: unauthenticated), every route 200. */
function app(opts: { maxKeys?: number } = {}) {
  let t = 0;
  const refused: CallerClass[] = [];
  const limit = callerRateLimit({
    rates,
    now: () => t,
    maxKeys: opts.maxKeys,
    refused: (c) => refused.push(c),
  });
  const handled: string[] = [];
  const a = new Hono<{ Variables: { principal: Principal } }>();
  a.use(async (c, next) => {
    const who = c.req.header('x-who');
    if (who) c.set('principal', { kind: 'token', name: who });
    await next();
  });
  a.use(limit);
  a.all('*', (c) => {
    handled.push(`${c.req.method} ${c.req.path}`);
    return c.json({ ok: true });
  });
  const call = (method: string, path: string, who?: string) =>
    a.request(path, { method, headers: who ? { 'x-who': who } : {} });
  return {
    call,
    handled,
    refused,
    limit,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('callerRateLimit', () => {
  it('lets the burst through, then answers 429 rate_limited with Retry-After, the route not run', async () => {
    const h = app();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.call('POST', '/v1/leases', 'crawler:a')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const res = await h.call('POST', '/v1/leases', 'crawler:a');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toEqual({
      error: 'rate_limited',
      message: 'too many lease-acquire requests from this caller; retry after 1 s',
    });
    expect(h.handled).toHaveLength(3);
    expect(h.refused).toEqual(['lease-acquire', 'lease-acquire']);
  });

  it('refills at the class rate', async () => {
    const h = app();
    for (let i = 0; i < 3; i++) await h.call('POST', '/v1/leases', 'crawler:a');
    expect((await h.call('POST', '/v1/leases', 'crawler:a')).status).toBe(429);
    h.advance(499); // 2/s: not a whole token yet
    expect((await h.call('POST', '/v1/leases', 'crawler:a')).status).toBe(429);
    h.advance(1);
    expect((await h.call('POST', '/v1/leases', 'crawler:a')).status).toBe(200);
    expect((await h.call('POST', '/v1/leases', 'crawler:a')).status).toBe(429);
    h.advance(10_000); // never more than the burst
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await h.call('POST', '/v1/leases', 'crawler:a')).status);
    expect(after).toEqual([200, 200, 200, 429]);
  });

  it('keeps one bucket per principal: a noisy caller does not starve another', async () => {
    const h = app();
    for (let i = 0; i < 5; i++) await h.call('POST', '/v1/leases', 'crawler:noisy');
    expect((await h.call('POST', '/v1/leases', 'crawler:noisy')).status).toBe(429);
    expect((await h.call('POST', '/v1/leases', 'crawler:quiet')).status).toBe(200);
    expect((await h.call('POST', '/v1/leases', 'admin')).status).toBe(200);
  });

  it('keeps one bucket per route class: a caller out of acquires may still renew, discover and administer', async () => {
    const h = app();
    for (let i = 0; i < 3; i++) await h.call('POST', '/v1/leases', 'ops');
    expect((await h.call('POST', '/v1/leases', 'ops')).status).toBe(429);
    expect((await h.call('POST', '/v1/leases/l1/renew', 'ops')).status).toBe(200);
    expect((await h.call('GET', '/v1/proxies', 'ops')).status).toBe(200);
    expect((await h.call('PUT', '/v1/proxies/p1/spec', 'ops')).status).toBe(200);
    expect((await h.call('GET', '/v1/proxies/p1', 'ops')).status).toBe(200);
    // …each of which has its own bucket of 1 now spent
    expect((await h.call('POST', '/v1/leases/l1/report', 'ops')).status).toBe(429);
    expect((await h.call('GET', '/v1/proxies', 'ops')).status).toBe(429);
    expect((await h.call('DELETE', '/v1/proxies/p1', 'ops')).status).toBe(429);
    expect((await h.call('GET', '/fleet/api/state', 'ops')).status).toBe(429);
    expect(h.refused).toEqual(['lease-acquire', 'lease-other', 'discovery', 'admin-write', 'admin-read']);
  });

  it('passes requests without a principal untouched, holding no bucket for them', async () => {
    const h = app();
    for (let i = 0; i < 10; i++) expect((await h.call('POST', '/v1/leases')).status).toBe(200);
    expect(h.limit.limiter.size).toBe(0);
  });

  it('holds at most maxKeys buckets, the stalest evicted', async () => {
    const h = app({ maxKeys: 3 });
    for (let i = 0; i < 50; i++) await h.call('GET', '/v1/proxies/p', `caller-${i}`);
    expect(h.limit.limiter.size).toBe(3);
  });

  it('counts a request once when a sub-app mounts it again after its own authentication', async () => {
    let t = 0;
    const limit = callerRateLimit({ rates, now: () => t });
    const a = new Hono<{ Variables: { principal: Principal } }>();
    a.use(limit); // the app's: no principal yet
    a.use(async (c, next) => {
      c.set('principal', { kind: 'token', name: 'ops' });
      await next();
    });
    a.use(limit); // the sub-app's, after its authentication
    a.use(limit); // (and a second one would not count again)
    a.get('*', (c) => c.text('ok'));
    expect((await a.request('/fleet/api/state')).status).toBe(200);
    expect((await a.request('/fleet/api/state')).status).toBe(429);
    t += 1000;
    expect((await a.request('/fleet/api/state')).status).toBe(200);
  });
});

describe('callerClass', () => {
  it.each([
    ['POST', '/v1/leases', 'lease-acquire'],
    ['GET', '/v1/leases/l1', 'lease-other'],
    ['POST', '/v1/leases/l1/renew', 'lease-other'],
    ['DELETE', '/v1/leases/l1', 'lease-other'],
    ['GET', '/v1/proxies', 'discovery'],
    ['HEAD', '/v1/proxies', 'discovery'],
    ['POST', '/v1/proxies', 'admin-write'],
    ['GET', '/v1/proxies/p1', 'admin-read'],
    ['PATCH', '/v1/proxies/p1/spec', 'admin-write'],
    ['POST', '/v1/jobs/probe:run', 'admin-write'],
    ['GET', '/fleet/events', 'admin-read'],
    ['PUT', '/v1/gateway/routing', 'admin-write'],
    ['GET', '/openapi.json', 'admin-read'],
    ['GET', '/metrics', 'admin-read'],
  ])('%s %s is %s', (method, path, cls) => {
    expect(callerClass(method, path)).toBe(cls);
  });

  it('names a variable for every class, with a default that has a whole token to give', () => {
    expect(CALLER_CLASSES.map(rateEnvName)).toEqual([
      'RATE_LIMIT_LEASE_ACQUIRE',
      'RATE_LIMIT_LEASE_OTHER',
      'RATE_LIMIT_DISCOVERY',
      'RATE_LIMIT_ADMIN_WRITE',
      'RATE_LIMIT_ADMIN_READ',
    ]);
    for (const cls of CALLER_CLASSES) expect(DEFAULT_CALLER_RATES[cls].burst).toBeGreaterThanOrEqual(1);
  });
});
