// The worker and gateway admin routes refuse bad input with the same status, code and message, in the
// same order, whether a route's own code or its OpenAPI route validator judges it (worker-openapi.ts,
// admin-openapi.ts): the path before the body, the worker's bucket taken before its body is judged, each
// query parameter of GET /v1/gateway/workers with its own message. The stores behind are stubbed to fail
// (503), so a request that gets past the checks shows as that.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { StoreError } from '../../../../shared/src/ports/proxy-store.js';
import { WorkerStoreError } from '../../../../shared/src/ports/workers.js';
import { staticTokenAuthenticator } from '../auth/static-tokens.js';
import { getWithBody as sendGetWithBody } from '../testing/get-with-body.js';
import { workerAuthenticator } from './auth.js';
import { type WorkersApiDeps, workersApi } from './index.js';
import { RateLimiter, WORKER_RATES } from './rate-limit.js';

const WORKER = 'gw-1-token-0123456789abcdef';
const ADMIN = 'admin-token-0123456789abcdef';

/** What got past the checks of a routing PUT: the documents written and the passes asked for. */
interface Seen {
  writes: unknown[];
  passes: unknown[];
}

/** `stores` replaces some of the failing stubs (a route that gets past its checks then answers). */
function app(seen: Seen = { writes: [], passes: [] }, stores: Partial<WorkersApiDeps> = {}) {
  const down = async () => {
    throw new WorkerStoreError('unavailable', 'stubbed');
  };
  const deps = {
    auth: workerAuthenticator({
      tokens: [{ workerId: 'gw-1', token: WORKER }],
      serviceAccounts: [],
      verifier: null,
      open: false,
    }),
    adminAuth: staticTokenAuthenticator([{ name: 'admin', token: ADMIN }]),
    limiter: new RateLimiter(() => 0),
    workers: { get: down, page: down, listInView: down },
    ownership: { read: down },
    routing: {
      put: async (config: unknown) => {
        seen.writes.push(config);
        return { written: true, unchanged: false, revision: seen.writes.length };
      },
    },
    requester: { request: async (req: unknown) => void seen.passes.push(req) },
    clock: new ManualClock(new Date('2026-12-01T00:00:00Z')),
    log: memoryLogger(),
    ...stores,
  } as unknown as WorkersApiDeps;
  const proxies = {
    get: async () => {
      throw new StoreError('unavailable', 'stubbed');
    },
  };
  const served = workersApi(deps, proxies);
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const token = path.startsWith('/v1/gateway') ? ADMIN : WORKER;
    const res = await served.request(path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') };
  };
  return Object.assign(call, { served });
}

/**
 * A GET with a body, sent over a socket (testing/get-with-body.ts) to the app served by @hono/node-server as
 * in production: a Fetch Request cannot carry one (app.request() throws), a client on the wire can.
 */
async function getWithBody(
  served: { fetch: (req: Request) => Response | Promise<Response> },
  path: string,
  body: string,
) {
  const server = createAdaptorServer({ fetch: served.fetch }) as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const token = path.startsWith('/v1/gateway') ? ADMIN : WORKER;
    const { status, text } = await sendGetWithBody({ port, path, token, body });
    return { status, body: JSON.parse(text) as unknown };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

const invalidBody = {
  error: 'invalid_request',
  message: 'invalid request body',
  issues: expect.arrayContaining([expect.objectContaining({ path: expect.any(String) })]),
};

describe('worker routes', () => {
  it('judge the path before the body, and the media type before the path', async () => {
    const call = app();
    expect(await call('POST', '/v1/workers/-bad-/ack', {})).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: 'not a worker id' },
    });
    const textPlain = { 'content-type': 'text/plain' };
    expect(await call('POST', '/v1/workers/-bad-/ack', {}, textPlain)).toMatchObject({
      status: 415,
      body: { error: 'unsupported_media_type' },
    });
  });

  it.each(['ack', 'runtime', 'outcomes'])(
    '%s: a body that fails its schema is the routes’ one 400',
    async (endpoint) => {
      const call = app();
      const answer = await call('POST', `/v1/workers/gw-1/${endpoint}`, { sessionId: 'x' });
      expect(answer).toEqual({ status: 400, body: invalidBody, retryAfter: null });
    },
  );

  it('register: the body first, then who may act for its worker id', async () => {
    const call = app();
    expect(await call('POST', '/v1/workers/register', { workerId: 'gw-1' })).toEqual({
      status: 400,
      body: invalidBody,
      retryAfter: null,
    });
    const other = { workerId: 'gw-2', instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 };
    expect(await call('POST', '/v1/workers/register', other)).toMatchObject({
      status: 403,
      body: { error: 'forbidden' },
    });
  });

  it('take the worker’s bucket before its body is judged: invalid bodies use it up too', async () => {
    const call = app();
    for (let i = 0; i < WORKER_RATES.ack.burst; i++) {
      expect((await call('POST', '/v1/workers/gw-1/ack', {})).status).toBe(400);
    }
    expect(await call('POST', '/v1/workers/gw-1/ack', {})).toMatchObject({
      status: 429,
      body: { error: 'rate_limited' },
      retryAfter: expect.any(String),
    });
  });

  // A parameter no worker route reads (all but the snapshot's sessionId) is refused, not ignored: a
  // register with one opened a session; valid bodies here, so only the query is wrong.
  it.each([
    [
      '/v1/workers/register?dryRun=true',
      { workerId: 'gw-1', instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 },
    ],
    ['/v1/workers/gw-1/ack?x=1', { sessionId: 'abcdefgh', version: 1, epoch: 0, checksum: '0'.repeat(64) }],
    ['/v1/workers/gw-1/outcomes?__proto__=1', { sessionId: 'abcdefgh', sequence: 1, outcomes: [] }],
  ])('POST %s: 400 invalid_request, an unread query parameter', async (path, body) => {
    expect(await app()('POST', path, body)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: 'invalid query string' },
    });
  });

  it('snapshot: sessionId required, the first of a repeated one read', async () => {
    const call = app();
    expect(await call('GET', '/v1/workers/gw-1/snapshot?sessionId=x')).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: 'sessionId query parameter required' },
    });
    // Past the checks: the (stubbed) store answers.
    expect(await call('GET', '/v1/workers/gw-1/snapshot?sessionId=abcdefgh&sessionId=x')).toMatchObject({
      status: 503,
      body: { error: 'unavailable' },
    });
  });
});

describe('gateway admin routes', () => {
  it.each([
    ['?all=maybe', 'all must be true or false'],
    ['?pageSize=abc', 'pageSize and pageToken page all=true only'],
    ['?all=false&pageToken=***', 'pageSize and pageToken page all=true only'],
    ['?all=true&pageSize=0', 'pageSize must be an integer in 1–500'],
    ['?all=true&pageSize=abc&pageToken=***', 'pageSize must be an integer in 1–500'],
    ['?all=true&pageToken=***', 'not a page token'],
    // Number() read these as sizes; only decimal digits are one.
    ['?all=true&pageSize=0x10', 'pageSize must be an integer in 1–500'],
    ['?all=true&pageSize=%201', 'pageSize must be an integer in 1–500'],
    ['?all=true&pageSize=1e2', 'pageSize must be an integer in 1–500'],
    // Well-formed base64url that names no document id ("\0\0\0", ".." or, below, 1,536 bytes), or no
    // text at all: a token the list never hands out, not the page after some arbitrary string.
    ['?all=true&pageToken=AAAA', 'not a page token'],
    ['?all=true&pageToken=zzzzzzzz', 'not a page token'],
    ['?all=true&pageToken=Li4', 'not a page token'],
  ])('GET workers%s: %s', async (query, message) => {
    expect(await app()('GET', `/v1/gateway/workers${query}`)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message },
    });
  });

  it('GET workers?all=true&pageToken=<an id longer than a worker id>: not a page token', async () => {
    const token = Buffer.from('a'.repeat(1536)).toString('base64url');
    expect(await app()('GET', `/v1/gateway/workers?all=true&pageToken=${token}`)).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: 'not a page token' },
    });
  });

  it('reclaims: the proxy name before the body, then the body, then the store', async () => {
    const call = app();
    for (const method of ['POST', 'DELETE']) {
      expect(
        await call(method, '/v1/gateway/reclaims/Not_A_Name', method === 'POST' ? {} : undefined),
      ).toEqual({
        status: 400,
        body: { error: 'invalid_request', message: 'not a proxy name' },
        retryAfter: null,
      });
    }
    expect(await call('POST', '/v1/gateway/reclaims/p-1', { ttlSeconds: 1 })).toEqual({
      status: 400,
      body: invalidBody,
      retryAfter: null,
    });
    expect(await call('POST', '/v1/gateway/reclaims/p-1', { ttlSeconds: 60 })).toMatchObject({
      status: 503,
      body: { error: 'unavailable' },
    });
  });

  it('routing: a body that fails its schema is the routes’ one 400', async () => {
    expect(await app()('PUT', '/v1/gateway/routing', { routes: [] })).toEqual({
      status: 400,
      body: invalidBody,
      retryAfter: null,
    });
  });

  // HostPattern (the stored and wire schema) takes these, so they were stored with a 200 and a pass: indexed
  // as written, the route matched no request (a host never carries a port) or, `*.0.0.1`, the IP literal
  // 10.0.0.1. Refused here only: a routing already stored with one still parses.
  const routing = (hosts: string[]) => ({
    routes: [{ name: 'r', match: { hosts }, policy: 'least-active' }],
  });
  it.each([
    '10.0.0.1:8080',
    '.',
    ':::',
    '*.0.0.1',
    '1.2.3.4:443',
    'a..b',
    '*.10.0.0',
    '010.0.0.1',
    '1.2.3',
    '0x7f.1',
  ])('routing: host %j can match no request: 400 at its path, nothing written, no pass', async (host) => {
    const seen: Seen = { writes: [], passes: [] };
    expect(await app(seen)('PUT', '/v1/gateway/routing', routing(['shop.example', host]))).toEqual({
      status: 400,
      body: {
        error: 'invalid_request',
        message: 'invalid request body',
        issues: [expect.objectContaining({ path: 'routes.0.match.hosts.1', code: 'invalid_host' })],
      },
      retryAfter: null,
    });
    expect(seen).toEqual({ writes: [], passes: [] });
  });

  it('routing: the hosts accepted before that can match a request still are (stored, a pass asked for)', async () => {
    const seen: Seen = { writes: [], passes: [] };
    const hosts = [
      '*',
      'Shop.Example',
      '*.example.com',
      'cafe.be.',
      '_acme.example',
      '10.0.0.1',
      '[10.0.0.1]',
      '2001:db8::1',
      '[2001:DB8::1]',
      '::ffff:1.2.3.4',
    ];
    expect(await app(seen)('PUT', '/v1/gateway/routing', routing(hosts))).toMatchObject({
      status: 200,
      body: { revision: 1 },
    });
    expect(seen.writes).toEqual([
      expect.objectContaining({
        routes: [
          expect.objectContaining({
            match: {
              hosts: [
                '*',
                'shop.example',
                '*.example.com',
                // A name's trailing dot dropped as it is stored (gateway-snapshot.ts withoutTrailingDots).
                'cafe.be',
                '_acme.example',
                '10.0.0.1',
                '10.0.0.1',
                '2001:db8::1',
                '2001:db8::1',
                '::ffff:1.2.3.4',
              ],
            },
          }),
        ],
      }),
    ]);
    expect(seen.passes).toHaveLength(1);
  });

  it('routing: a malformed If-Match is a bad request header, not a bad body', async () => {
    const valid = { routes: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }] };
    expect(await app()('PUT', '/v1/gateway/routing', valid, { 'if-match': '7' })).toMatchObject({
      status: 400,
      body: {
        error: 'invalid_request',
        message: 'invalid request header',
        issues: [expect.objectContaining({ path: 'If-Match', code: 'invalid_if_match' })],
      },
    });
  });
});

// A route that takes no body refuses one rather than ignore it (docs/api.md § Errors), the GETs too.
describe('GET routes with a body', () => {
  /** `body` (small) is 400 unexpected_body; 2 KiB, over the 1 KiB bound, is 413. */
  async function expectBodyRefused(served: Parameters<typeof getWithBody>[0], path: string, body: string) {
    expect(await getWithBody(served, path, body)).toEqual({
      status: 400,
      body: expect.objectContaining({
        error: 'invalid_request',
        issues: [expect.objectContaining({ code: 'unexpected_body' })],
      }),
    });
    expect(await getWithBody(served, path, 'x'.repeat(2048))).toMatchObject({
      status: 413,
      body: { error: 'payload_too_large' },
    });
  }

  it.each([
    ['/v1/gateway/ownership'],
    ['/v1/gateway/routing'],
    ['/v1/workers/gw-1/snapshot?sessionId=abcdefgh'],
  ])('GET %s: 400 unexpected_body; over 1 KiB, 413', async (path) => {
    await expectBodyRefused(app().served, path, '{"force":true}');
  });

  // Stores that answer (empty), so that a request past the checks shows as a 200.
  const empty = async () => new Map();
  const answering = {
    workers: { listInView: async () => [], page: async () => ({ records: [], next: null }) },
    ownership: { read: async () => ({ epoch: 3, records: new Map() }) },
    snapshots: { headersInView: empty, headersOf: empty },
    pool: { inPool: async () => ({ proxies: [], skipped: [] }) },
    settings: DEFAULT_WORKER_SETTINGS,
  } as unknown as Partial<WorkersApiDeps>;

  // Served by app.get (admin-routes.ts), out of the route middleware's reach: it read no body, any size.
  it.each([['/v1/gateway/workers'], ['/v1/gateway/workers?all=true&pageSize=10']])(
    'GET %s: 400 unexpected_body; over 1 KiB, 413; without one, 200',
    async (path) => {
      const { served } = app(undefined, answering);
      await expectBodyRefused(served, path, '{"all":true}');
      expect(await getWithBody(served, path, '')).toMatchObject({
        status: 200,
        body: { epoch: 3, workers: [] },
      });
    },
  );

  it('without one they get past those checks', async () => {
    const call = app(undefined, answering);
    expect((await call('GET', '/v1/gateway/ownership')).status).toBe(200);
    expect((await call('GET', '/v1/gateway/workers')).status).toBe(200);
    const storeDown = app();
    expect((await storeDown('GET', '/v1/workers/gw-1/snapshot?sessionId=abcdefgh')).status).toBe(503);
  });
});
