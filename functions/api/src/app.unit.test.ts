import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { StoreError } from '../../../shared/src/ports/proxy-store.js';
import { routineRequest } from './app.js';
import { InMemoryJobRuns, InMemoryJobScheduler } from './jobs/testing/in-memory-jobs.js';
import { ADMIN_TOKEN, everySurface, harness } from './testing/harness.js';

// credentialsRef: the default cloud-init needs it (the API refuses a managed spec that could never boot).
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};

describe('the service', () => {
  it('answers /healthz without credentials', async () => {
    const res = await harness().app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, version: 'test' });
  });

  it('checks a lease route credential once (an ID token is an RS256 verification)', async () => {
    const h0 = everySurface();
    let checks = 0;
    const h = everySurface({
      auth: {
        description: h0.deps.auth.description,
        authenticate: (token) => {
          checks++;
          return h0.deps.auth.authenticate(token);
        },
      },
    });
    for (const [method, path] of [
      ['POST', '/v1/leases'],
      ['DELETE', '/v1/leases/abc'],
    ] as const) {
      checks = 0;
      await h.app.request(path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(checks, `${method} ${path}`).toBe(1);
      // …and checked at all: without a credential, refused before anything else.
      expect((await h.app.request(path, { method })).status, `${method} ${path}`).toBe(401);
    }
  });

  it('mounts the unauthenticated EGRESS echo only when configured', async () => {
    expect((await harness().app.request('/v1/echo')).status).toBe(404);
    const h = harness({ echo: { trustedHops: 0, remoteAddress: () => '127.0.0.9' } });
    const res = await h.app.request('/v1/echo');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ip: '127.0.0.9' });
  });

  it('answers unknown routes 404 not_found and wrong methods 405 with Allow', async () => {
    const h = harness();
    const unknown = await h.call('GET', '/v2/nothing');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: 'not_found' });
    const wrong = await h.call('POST', '/v1/proxies/p1', managed);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, DELETE');
    expect(await wrong.json()).toMatchObject({ error: 'method_not_allowed' });
    expect((await h.call('DELETE', '/v1/proxies')).status).toBe(405);
  });

  it.each([
    ['with Content-Length', true],
    ['streamed, without Content-Length', false],
  ])('refuses bodies over 64 KiB with 413 payload_too_large (%s)', async (_label, withLength) => {
    const h = harness();
    const body = JSON.stringify({ name: 'p1', spec: { ...managed, image: 'x'.repeat(70_000) } });
    const headers: Record<string, string> = withLength ? { 'content-length': String(body.length) } : {};
    const res = await h.call('POST', '/v1/proxies', body, headers);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: 'payload_too_large' });
    expect(await h.store.snapshot()).toEqual([]);
  });

  it('answers 503 unavailable with Retry-After when the store is down', async () => {
    const h = harness();
    h.store.interceptNext('get', () => {
      throw new StoreError('unavailable', 'firestore: 14 UNAVAILABLE');
    });
    const res = await h.call('GET', '/v1/proxies/p1');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
  });

  it('turns an unexpected throw into 500 internal with the request id, and logs the stack', async () => {
    const h = harness();
    h.store.interceptNext('listAll', () => {
      throw new TypeError('boom');
    });
    const res = await h.call('GET', '/v1/proxies', undefined, { 'x-request-id': 'req-123' });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'internal', message: 'internal error', requestId: 'req-123' });
    const line = h.log.lines.find((l) => l.severity === 'ERROR' && l.requestId === 'req-123');
    expect(line).toMatchObject({ error: { name: 'TypeError', message: 'boom' } });
    expect(String((line?.error as { stack?: string } | undefined)?.stack)).toContain('TypeError: boom');
  });

  it('logs one structured line per request, with the principal but never the token', async () => {
    const h = harness();
    await h.call('POST', '/v1/proxies', { name: 'p1', spec: managed }, { 'x-cloud-trace-context': 'abc' });
    await h.call('GET', '/v1/proxies?attr.secret=hush', undefined, {
      authorization: 'Bearer wrong-token-123456789',
    });
    expect(h.log.lines).toHaveLength(2);
    expect(h.log.lines[0]).toMatchObject({
      severity: 'INFO',
      message: 'POST /v1/proxies 201',
      httpRequest: { requestMethod: 'POST', requestUrl: '/v1/proxies', status: 201 },
      principal: 'token:unit',
    });
    expect((h.log.lines[0]?.httpRequest as { latency?: string } | undefined)?.latency).toMatch(
      /^\d+\.\d{3}s$/,
    );
    expect(h.log.lines[1]).toMatchObject({ severity: 'WARNING', httpRequest: { status: 401 } });
    const all = JSON.stringify(h.log.lines);
    expect(all).not.toContain(ADMIN_TOKEN);
    expect(all).not.toContain('wrong-token');
    expect(all).not.toContain('hush');
  });

  it("logs the probe's echo and the workers' heartbeats at DEBUG when they succeed, at WARNING when not", async () => {
    // GET /v1/echo comes twice a minute per proxy (the EGRESS tier: 86 M a month at 1,000 proxies) and
    // every worker reports every 5 s: at INFO their lines alone outgrew Cloud Logging's free allotment
    // (docs/cost.md § Logging). The probe logs each EGRESS result itself; a failure here is still logged.
    const h = harness({ echo: { trustedHops: 0, remoteAddress: () => '127.0.0.9' } });
    expect((await h.app.request('/v1/echo')).status).toBe(200);
    expect((await h.app.request('/v1/echo', { method: 'POST' })).status).toBe(405);
    expect(h.log.lines.map((l) => [l.severity, l.message])).toEqual([
      ['DEBUG', 'GET /v1/echo 200'],
      ['WARNING', 'POST /v1/echo 405'],
    ]);
    for (const path of ['/v1/workers/w-1/runtime', '/v1/workers/w-1/outcomes', '/v1/workers/w-1/ack'])
      expect(routineRequest('POST', path)).toBe(true);
    for (const [method, path] of [
      ['POST', '/v1/workers/register'],
      ['GET', '/v1/workers/w-1/snapshot'],
      ['POST', '/v1/leases'],
      ['GET', '/v1/echo/x'],
    ] as const)
      expect(routineRequest(method, path)).toBe(false);
  });

  it("attaches the request's trace when the logger names a project: traceparent first", async () => {
    const log = memoryLogger({ traceProject: 'proj' });
    const h = harness({ log });
    await h.call('GET', '/v1/proxies', undefined, {
      'x-cloud-trace-context': '0123456789abcdef0123456789abcdef/1;o=1',
    });
    await h.call('GET', '/v1/proxies', undefined, {
      traceparent: '00-fedcba9876543210fedcba9876543210-00f067aa0ba902b7-00',
      'x-cloud-trace-context': '0123456789abcdef0123456789abcdef/1;o=1',
    });
    await h.call('GET', '/v1/proxies', undefined, { 'x-cloud-trace-context': 'abc' });
    expect(log.lines[0]).toMatchObject({
      'logging.googleapis.com/trace': 'projects/proj/traces/0123456789abcdef0123456789abcdef',
      'logging.googleapis.com/spanId': '0000000000000001',
      'logging.googleapis.com/trace_sampled': true,
    });
    expect(log.lines[1]).toMatchObject({
      'logging.googleapis.com/trace': 'projects/proj/traces/fedcba9876543210fedcba9876543210',
      'logging.googleapis.com/trace_sampled': false,
    });
    expect(log.lines[2]).not.toHaveProperty('logging.googleapis.com/trace');
    // Without a project (the local plane) no line names one.
    const plain = harness();
    await plain.call('GET', '/v1/proxies', undefined, {
      traceparent: '00-fedcba9876543210fedcba9876543210-00f067aa0ba902b7-01',
    });
    expect(plain.log.lines[0]).not.toHaveProperty('logging.googleapis.com/trace');
  });
});

describe('credentials before the body', () => {
  const big = JSON.stringify({ name: 'big', spec: { ...managed, image: 'x'.repeat(70_000) } });
  const routes: Array<[string, string]> = [
    ['POST', '/v1/proxies'],
    ['PUT', '/v1/proxies/a/spec'],
    ['DELETE', '/v1/proxies/a'],
    ['POST', '/v1/jobs/gc-sweep:run'],
    ['POST', '/v1/proxies/a/reconcile'],
  ];
  const setup = () =>
    harness({
      jobs: {
        scheduler: new InMemoryJobScheduler(['gc-sweep'], () => new Date(0)),
        runs: new InMemoryJobRuns(),
      },
    });

  it.each(routes)('%s %s with a 70 KB body: 401 without a credential, 413 with one', async (method, path) => {
    const h = setup();
    const send = (headers: Record<string, string>) =>
      h.app.request(path, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        body: big,
      });
    const anonymous = await send({});
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: 'unauthenticated' });
    expect((await send({ authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
    const admin = await send(h.auth);
    expect(admin.status).toBe(413);
    expect(await admin.json()).toMatchObject({ error: 'payload_too_large' });
    expect(h.store.writeCalls).toEqual([]);
  });
});

describe('/openapi.json', () => {
  it('documents the listing’s paging: pageSize 1–1000 and pageToken in the query, nextPageToken in the answer', async () => {
    const h = harness();
    const doc = (await (await h.call('GET', '/openapi.json')).json()) as {
      paths: Record<
        string,
        Record<string, { parameters?: Array<{ name: string; in: string; schema: unknown }> }>
      >;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    const params = doc.paths['/v1/proxies']?.get?.parameters ?? [];
    expect(params.find((p) => p.name === 'pageSize')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 1000 },
    });
    expect(params.find((p) => p.name === 'pageToken')).toMatchObject({
      in: 'query',
      required: false,
      schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,2048}$' },
    });
    expect(doc.components.schemas.ProxyList?.properties?.nextPageToken).toMatchObject({
      type: ['string', 'null'],
    });
    // Optional: an unpaged listing answers without it.
    expect((doc.components.schemas.ProxyList as { required?: string[] }).required).not.toContain(
      'nextPageToken',
    );
  });

  it('is an OpenAPI 3.1 document generated from the domain schemas, behind admin auth', async () => {
    const h = harness();
    expect((await h.app.request('/openapi.json')).status).toBe(401);
    const res = await h.call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/healthz',
      '/v1/proxies',
      '/v1/proxies/{name}',
      '/v1/proxies/{name}/reconcile',
      '/v1/proxies/{name}/spec',
    ]);
    expect(Object.keys(doc.paths['/v1/proxies/{name}/spec'] ?? {}).sort()).toEqual(['patch', 'put']);
    expect(doc.paths['/v1/proxies']?.post?.responses).toHaveProperty('409');
    // A managed port its firewall does not open: documented on every route that writes a spec.
    for (const [path, method] of [
      ['/v1/proxies', 'post'],
      ['/v1/proxies/{name}/spec', 'put'],
      ['/v1/proxies/{name}/spec', 'patch'],
    ] as const) {
      expect(JSON.stringify(doc.paths[path]?.[method]?.responses['400'])).toContain('port_not_allowed');
    }
    expect(doc.components.schemas.Error?.properties).toHaveProperty('allowedPorts');
    // Both modes name the protocol enum; the managed one says only http is served.
    const protocols = JSON.stringify(doc.components.schemas.ProxySpec).match(
      /"protocol":\{"type":"string","enum":\["http","socks5"\]/g,
    );
    expect(protocols).toHaveLength(2);
    expect(JSON.stringify(doc.components.schemas.ProxySpec)).toContain('protocol_unsupported');
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['Proxy', 'ProxySpec', 'CreateProxyRequest', 'ProxyList', 'Error']),
    );
    expect(Object.keys(doc.components.schemas.Proxy?.properties ?? {})).toEqual(
      expect.arrayContaining([
        'name',
        'uid',
        'generation',
        'createdAt',
        'deletionRequestedAt',
        'spec',
        'status',
      ]),
    );
  });
});
