import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { anyOf } from './auth/authenticator.js';
import { staticTokenAuthenticator } from './auth/static-tokens.js';
import { InMemoryFleetFeed } from './fleet/feed.js';
import { type CallerRates, DEFAULT_CALLER_RATES } from './middleware/caller-rate-limit.js';
import { RATE_LIMITED_DESCRIPTION } from './routes/openapi-rate-limit.js';
import { ADMIN_TOKEN, everySurface, harness } from './testing/harness.js';
import type { WorkersApiDeps } from './workers/index.js';

const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};
const tight: CallerRates = {
  ...DEFAULT_CALLER_RATES,
  'admin-write': { perSecond: 1, burst: 2 },
  'admin-read': { perSecond: 1, burst: 2 },
};

function limited() {
  let t = 0;
  const refused: string[] = [];
  const h = harness({
    fleet: new InMemoryFleetFeed(),
    callerLimit: { rates: tight, now: () => t, refused: (c) => refused.push(c) },
  });
  return { ...h, refused, advance: (ms: number) => (t += ms) };
}

describe('the app with per-caller rate limits', () => {
  it('refuses an admin write over the limit with 429 rate_limited and Retry-After, storing nothing', async () => {
    const h = limited();
    expect((await h.call('POST', '/v1/proxies', { name: 'p1', spec: managed })).status).toBe(201);
    expect((await h.call('POST', '/v1/proxies', { name: 'p2', spec: managed })).status).toBe(201);
    const before = await h.store.snapshot();
    const res = await h.call('POST', '/v1/proxies', { name: 'p3', spec: managed });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: 'rate_limited' });
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toHaveLength(2);
    expect(h.refused).toEqual(['admin-write']);
    // reads are another class; after a second the write goes through
    expect((await h.call('GET', '/v1/proxies/p1')).status).toBe(200);
    h.advance(1000);
    expect((await h.call('POST', '/v1/proxies', { name: 'p3', spec: managed })).status).toBe(201);
  });

  it('refuses before reading the body: an oversized body over the limit is 429, not 413', async () => {
    const h = limited();
    await h.call('DELETE', '/v1/proxies/a');
    await h.call('DELETE', '/v1/proxies/b');
    const big = JSON.stringify({ name: 'p1', spec: { ...managed, image: 'x'.repeat(70_000) } });
    expect((await h.call('POST', '/v1/proxies', big)).status).toBe(429);
  });

  it('answers unauthenticated calls 401 however many, without spending a bucket', async () => {
    const h = limited();
    for (let i = 0; i < 5; i++) {
      expect(
        (await h.call('POST', '/v1/proxies', { name: 'p1', spec: managed }, { authorization: '' })).status,
      ).toBe(401);
    }
    expect((await h.call('POST', '/v1/proxies', { name: 'p1', spec: managed })).status).toBe(201);
    expect(h.refused).toEqual([]);
  });

  it('limits the fleet page after its own authentication, counting each request once', async () => {
    const h = limited();
    expect((await h.call('GET', '/fleet/api/state')).status).toBe(200);
    expect((await h.call('GET', '/fleet/api/state')).status).toBe(200);
    const res = await h.call('GET', '/fleet/api/state');
    expect(res.status).toBe(429);
    expect(await res.json()).toMatchObject({ error: 'rate_limited' });
    expect(
      (await h.call('GET', '/fleet/api/state', undefined, { authorization: 'Bearer nope-nope-nope' })).status,
    ).toBe(401);
  });

  it('limits /v1/gateway after its own authentication, with the same buckets as the rest of the admin API', async () => {
    let t = 0;
    const unused = {} as never;
    const auth = anyOf([staticTokenAuthenticator([{ name: 'unit', token: ADMIN_TOKEN }])]);
    const h = harness({
      workers: {
        log: memoryLogger(),
        auth: unused,
        adminAuth: auth,
        limiter: unused,
      } as unknown as WorkersApiDeps,
      callerLimit: { rates: tight, now: () => t },
    });
    // A body the route's schema refuses (400, before any store): each still spends an admin-write token.
    const put = () => h.call('PUT', '/v1/gateway/routing', { nonsense: true });
    expect((await put()).status).toBe(400);
    expect((await h.call('DELETE', '/v1/proxies/nope')).status).toBe(404);
    const res = await put();
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: 'rate_limited' });
    t += 1000;
    expect((await put()).status).toBe(400);
  });

  it('leaves /healthz alone', async () => {
    const h = limited();
    for (let i = 0; i < 5; i++) expect((await h.call('GET', '/healthz')).status).toBe(200);
  });
});

describe('/openapi.json with per-caller rate limits', () => {
  it('documents the 429 on every operation behind a crawler or admin credential, and only there', async () => {
    const h = everySurface({ callerLimit: { rates: DEFAULT_CALLER_RATES, now: () => 0 } });
    const doc = (await (await h.call('GET', '/openapi.json')).json()) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { headers?: object; description?: string }> }>
      >;
    };
    const with429 = (path: string, method: string) => '429' in doc.paths[path]![method]!.responses;
    expect(with429('/v1/leases', 'post')).toBe(true);
    expect(with429('/v1/leases/{id}/renew', 'post')).toBe(true);
    expect(with429('/v1/proxies', 'get')).toBe(true);
    expect(with429('/v1/proxies', 'post')).toBe(true);
    expect(with429('/v1/gateway/routing', 'put')).toBe(true);
    expect(with429('/fleet/api/state', 'get')).toBe(true);
    expect(doc.paths['/v1/leases']!.post!.responses['429']!.headers).toHaveProperty('Retry-After');
    expect(with429('/healthz', 'get')).toBe(false);
    expect(with429('/v1/echo', 'get')).toBe(false);
    // the worker routes document their own limit's 429 (per worker), untouched
    expect(doc.paths['/v1/workers/register']!.post!.responses['429']).not.toMatchObject({
      description: RATE_LIMITED_DESCRIPTION,
    });
    // without the limit configured, no 429 is claimed
    const plain = (await (await harness().call('GET', '/openapi.json')).json()) as typeof doc;
    expect('429' in plain.paths['/v1/proxies']!.post!.responses).toBe(false);
  });
});
