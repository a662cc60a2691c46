import { describe, expect, it } from 'vitest';
import { emptyStatus, type ProxyResource } from '../../../../shared/src/domain/proxy.js';
import { StoreError } from '../../../../shared/src/ports/proxy-store.js';
import { PublishError } from '../../../../shared/src/ports/publish-error.js';
import { aProxy, managedSpec } from '../../../../shared/src/testing/proxy-fixtures.js';
import { etagOf, proxyTag } from '../admin/if-match.js';
import type { DiscoveryView } from '../discovery/list.js';
import { ApiError } from '../errors.js';
import { everySurface, harness } from '../testing/harness.js';

// credentialsRef: the default cloud-init needs it (the API refuses a managed spec that could never boot).
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};
const external = { mode: 'external', endpoint: { host: '203.0.113.7', port: 8080 } };

async function withProxy(name = 'p1', spec: Record<string, unknown> = managed) {
  const h = harness();
  const res = await h.call('POST', '/v1/proxies', { name, spec });
  expect(res.status).toBe(201);
  h.publisher.published.length = 0;
  h.store.writeCalls.length = 0;
  return h;
}

/** A managed proxy stored before the API refused specs without credentials or cloud-init. */
const legacy = async (): Promise<ProxyResource> => aProxy({ spec: managedSpec() });

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

/**
 * A proxy named `old` stored with a health check written before a check that now refuses it: an edit of
 * anything else must still go through (the answer to a capacity PATCH).
 */
async function editOfStoredHealthCheck(healthCheck: Partial<ProxyResource['spec']['healthCheck']>) {
  const h = harness();
  const old = await legacy();
  await h.store.inner.create({
    ...old,
    name: 'old',
    spec: {
      ...old.spec,
      credentialsRef: { secret: 's', version: 'latest' },
      healthCheck: { ...old.spec.healthCheck, ...healthCheck },
    },
  });
  return h.call('PATCH', '/v1/proxies/old/spec', { capacity: 9 });
}

/** As if reconcile had seen the current generation. */
async function observed(h: ReturnType<typeof harness>, name: string) {
  const cur = await h.store.inner.get(name);
  const status = { ...cur!.proxy.status, observedGeneration: cur!.proxy.generation };
  await h.store.inner.writeStatus(name, status, cur!.version);
}

describe('POST /v1/proxies', () => {
  it('creates with server-set fields and defaults, and publishes "created"', async () => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', {
      name: 'edge-1',
      spec: { ...managed, attributes: { team: 'a' } },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe('/v1/proxies/edge-1');
    const body = await json(res);
    expect(body).toMatchObject({
      name: 'edge-1',
      uid: '00000000-0000-4000-8000-000000000001',
      generation: 1,
      createdAt: '2026-02-01T12:00:00.000Z',
      deletionRequestedAt: null,
      spec: {
        mode: 'managed',
        zone: 'us-central1-a',
        machineType: 'e2-small',
        capacity: 4,
        attributes: { team: 'a' },
      },
      status: { phase: 'Pending', observedGeneration: 0 },
    });
    const stored = await h.store.inner.get('edge-1');
    expect(stored?.proxy.status).toEqual(emptyStatus());
    expect(stored?.proxy.createdAt).toEqual(new Date('2026-02-01T12:00:00Z'));
    expect(h.publisher.published).toEqual([{ proxy: 'edge-1', reason: 'created' }]);
  });

  it('answers 409 already_exists for a taken name, and changes nothing', async () => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call('POST', '/v1/proxies', { name: 'p1', spec: external });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ error: 'already_exists' });
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });

  it.each([
    [{ name: 'p', spec: managed, status: { phase: 'Ready' } }, 'status', 'unrecognized_key'],
    [{ name: 'p', spec: managed, uid: '00000000-0000-4000-8000-000000000009' }, 'uid', 'unrecognized_key'],
    [{ name: 'p', spec: managed, generation: 7 }, 'generation', 'unrecognized_key'],
    [{ name: 'Bad_Name', spec: managed }, 'name', 'invalid_format'],
    [{ name: 'p', spec: { ...managed, zone: 'mars' } }, 'spec.zone', 'invalid_format'],
    [{ name: 'p', spec: { ...managed, capacity: 0 } }, 'spec.capacity', 'too_small'],
    [{ name: 'p', spec: { mode: 'teleport' } }, 'spec.mode', 'invalid_union'],
    [{ name: 'p', spec: { ...external, endpoint: { host: 'h' } } }, 'spec.endpoint.port', 'invalid_type'],
    [
      { name: 'p', spec: { ...managed, attributes: { 'bad key': 'v' } } },
      'spec.attributes.bad key',
      'invalid_key',
    ],
    [{ name: 'p' }, 'spec', 'invalid_type'],
    // It could never boot: reconcile would latch it Failed at once (cloud-init.ts).
    [
      { name: 'p', spec: { mode: 'managed', zone: 'us-central1-a' } },
      'spec.credentialsRef',
      'credentials_required',
    ],
    // squid's Safe_ports refuses it whatever SSL_ports says: listed, it would still be a 403.
    [
      { name: 'p', spec: { ...managed, connectPorts: [443, 22] } },
      'spec.connectPorts.1',
      'connect_port_unsafe',
    ],
    [{ name: 'p', spec: { ...managed, connectPorts: [] } }, 'spec.connectPorts', 'too_small'],
    // Its VM runs an HTTP proxy: nothing on it would speak SOCKS5 (managed-protocol.ts).
    [{ name: 'p', spec: { ...managed, protocol: 'socks5' } }, 'spec.protocol', 'protocol_unsupported'],
    // No adapter: reconcile would latch it PermanentError, and provider is immutable (managed-provider.ts).
    [{ name: 'p', spec: { ...managed, provider: 'aws' } }, 'spec.provider', 'provider_unsupported'],
    [{ name: 'p', spec: { ...managed, provider: 'GCE' } }, 'spec.provider', 'provider_unsupported'],
    [
      { name: 'p', spec: { ...external, endpoint: { host: 'h', port: 1080, protocol: 'socks4' } } },
      'spec.endpoint.protocol',
      'invalid_value',
    ],
  ])('refuses %j: 400 at %s (%s)', async (body, path, code) => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', body);
    expect(res.status).toBe(400);
    const err = await json(res);
    expect(err.error).toBe('invalid_request');
    expect(err.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    expect(await h.store.snapshot()).toEqual([]);
    expect(h.publisher.published).toEqual([]);
  });

  it.each([
    ['{"name":', 'application/json', 400, 'invalid_json'],
    ['', 'application/json', 400, 'invalid_json'],
    ['{"name":"p1"}', 'text/plain', 415, 'unsupported_media_type'],
    ['{"name":"p1"}', 'application/json; charset=latin1', 415, 'unsupported_media_type'],
    ['{"__proto__":{"x":1}}', 'application/json', 400, 'invalid_request'],
    [`${'['.repeat(100)}${']'.repeat(100)}`, 'application/json', 400, 'invalid_request'],
  ])('refuses the body %s as %s with %i %s', async (body, type, status, error) => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', body, { 'content-type': type });
    expect(res.status).toBe(status);
    expect(await json(res)).toMatchObject({ error });
    expect(h.store.writeCalls).toEqual([]);
  });

  // JSON.parse keeps the last of a repeated key: {"name":"p4","name":"p5"} created p5.
  it.each([
    ['the name', `{"name":"p4","name":"p5","spec":${JSON.stringify(external)}}`, 'name'],
    ['the name, escaped', `{"name":"p4","n\\u0061me":"p5","spec":${JSON.stringify(external)}}`, 'name'],
    [
      'a spec field',
      `{"name":"p4","spec":{"mode":"external","capacity":1,"capacity":500,"endpoint":{"host":"h","port":1}}}`,
      'spec.capacity',
    ],
    [
      'an attribute',
      `{"name":"p4","spec":{"mode":"external","attributes":{"pool":"a","pool":"b"},"endpoint":{"host":"h","port":1}}}`,
      'spec.attributes.pool',
    ],
  ])('refuses a repeated key (%s): 400 duplicate_key at its path, nothing written', async (_, body, path) => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', body);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      error: 'invalid_request',
      issues: [{ path, code: 'duplicate_key', message: expect.any(String) }],
    });
    expect(h.store.writeCalls).toEqual([]);
    expect(await h.store.snapshot()).toEqual([]);
    expect(h.publisher.published).toEqual([]);
  });

  it('refuses a body that is not UTF-8 (400 invalid_json), rather than store U+FFFD for its bytes', async () => {
    const h = harness();
    const text = JSON.stringify({ name: 'p1', spec: { ...managed, attributes: { team: 'a#b' } } });
    const bytes = Buffer.from(text);
    bytes[bytes.indexOf('#')] = 0xff; // a byte no UTF-8 text has, in a free-form attribute value
    const res = await h.app.request('/v1/proxies', {
      method: 'POST',
      headers: { ...h.auth, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ error: 'invalid_json' });
    expect(h.store.writeCalls).toEqual([]);
  });

  // RFC 9110 §8.3.1: `parameters = *( OWS ";" OWS [ parameter ] )` — whitespace before ";" and an empty
  // parameter are well-formed; "utf8" is UTF-8 (a WHATWG label for it). Each was a 415, the first three
  // with a bare "Unsupported Media Type" from the OpenAPI validator after ours had accepted them.
  it.each([
    ['POST', 'application/json;'],
    ['POST', 'application/json ; charset=utf-8'],
    ['POST', 'application/json;charset=UTF-8;'],
    ['POST', 'application/json; charset=utf8'],
    ['PATCH', 'application/merge-patch+json;'],
    ['PATCH', 'application/merge-patch+json ; charset=UTF-8'],
    ['PUT', 'application/json ;'],
  ])('%s takes JSON sent as %j', async (method, type) => {
    const h = await withProxy('p1');
    const res =
      method === 'POST'
        ? await h.call('POST', '/v1/proxies', { name: 'p2', spec: managed }, { 'content-type': type })
        : await h.call(
            method,
            '/v1/proxies/p1/spec',
            method === 'PUT' ? { ...managed, capacity: 9 } : { capacity: 9 },
            {
              'content-type': type,
            },
          );
    expect(res.status).toBe(method === 'POST' ? 201 : 200);
  });

  it('still answers 201 when publishing fails, and logs it as an error', async () => {
    const h = harness();
    h.publisher.failNext(Object.assign(new Error('pubsub down'), { code: 14 }));
    const res = await h.call('POST', '/v1/proxies', { name: 'p1', spec: managed });
    expect(res.status).toBe(201);
    expect(await h.store.inner.get('p1')).not.toBeNull();
    expect(h.log.lines).toContainEqual(
      expect.objectContaining({ severity: 'ERROR', proxy: 'p1', reason: 'created', errorKind: 14 }),
    );
  });
});

describe('a managed spec with neither credentialsRef nor cloudInit', () => {
  const bare = { mode: 'managed', zone: 'us-central1-a' };

  it('is accepted with its own cloud-init instead', async () => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', {
      name: 'p1',
      spec: { ...bare, cloudInit: { inline: '#!/bin/sh\n' } },
    });
    expect(res.status).toBe(201);
  });

  it.each([
    ['PUT', { ...bare, capacity: 9 }],
    ['PATCH', { credentialsRef: null }],
  ])('is refused when %s would drop the credentials, and nothing changes', async (method, body) => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call(method, '/v1/proxies/p1/spec', body, {
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      error: 'invalid_request',
      issues: [expect.objectContaining({ path: 'credentialsRef', code: 'credentials_required' })],
    });
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });

  it('does not stop an edit of a proxy stored without them (written before the check)', async () => {
    const h = harness();
    await h.store.inner.create({ ...(await legacy()), name: 'old' });
    const res = await h.call(
      'PATCH',
      '/v1/proxies/old/spec',
      { capacity: 9 },
      {
        'content-type': 'application/merge-patch+json',
      },
    );
    expect(res.status).toBe(200);
  });
});

describe('a health-check URL with credentials in it', () => {
  // Stored in Firestore, listed to every crawler, sent through the proxy as the request target: a
  // password in it would be in all of those. The proxy's own credentials come from credentialsRef.
  const url = 'http://alice:s3cret@target.example/health';
  const refusal = (path: string) => ({
    error: 'invalid_request',
    issues: [expect.objectContaining({ path, code: 'credentials_in_url' })],
  });

  it('is refused on POST, the password not echoed, nothing stored or published', async () => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', {
      name: 'p1',
      spec: { ...managed, healthCheck: { url } },
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject(refusal('spec.healthCheck.url'));
    expect(text).not.toContain('s3cret');
    expect(await h.store.inner.get('p1')).toBeNull();
    expect(h.publisher.published).toEqual([]);
  });

  it.each([
    ['PUT', { ...managed, healthCheck: { url } }],
    ['PATCH', { healthCheck: { url } }],
    ['PATCH', { healthCheck: { url: 'https://:tok@target.example/' } }],
  ])('is refused on %s, and nothing changes', async (method, body) => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call(method, '/v1/proxies/p1/spec', body);
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject(refusal('healthCheck.url'));
    expect(text).not.toMatch(/s3cret|tok@/);
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });

  it('does not stop an edit of a proxy stored with one (written before the check)', async () => {
    expect((await editOfStoredHealthCheck({ url })).status).toBe(200);
  });
});

describe('a health-check expectedStatus of 1xx', () => {
  // An interim answer: the HTTP client never hands it over as the response, so every check failed with the
  // final status and the proxy never turned Healthy (as a route's targetCheck refuses one).
  const refusal = (path: string) => ({
    error: 'invalid_request',
    issues: [expect.objectContaining({ path, code: 'expected_status_unreachable' })],
  });

  it.each([100, 101, 103, 199])('%i is refused on POST, nothing stored or published', async (status) => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', {
      name: 'p1',
      spec: { ...managed, healthCheck: { expectedStatus: status } },
    });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject(refusal('spec.healthCheck.expectedStatus'));
    expect(await h.store.inner.get('p1')).toBeNull();
    expect(h.publisher.published).toEqual([]);
  });

  it('is refused on PATCH, and nothing changes; 200 and 204 are taken', async () => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call('PATCH', '/v1/proxies/p1/spec', { healthCheck: { expectedStatus: 101 } });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject(refusal('healthCheck.expectedStatus'));
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
    expect(
      (await h.call('PATCH', '/v1/proxies/p1/spec', { healthCheck: { expectedStatus: 204 } })).status,
    ).toBe(200);
  });

  it('does not stop an edit of a proxy stored with one (written before the check)', async () => {
    expect((await editOfStoredHealthCheck({ expectedStatus: 100 })).status).toBe(200);
  });
});

describe('SOCKS5 endpoints', () => {
  const socks = { ...external, endpoint: { host: '203.0.113.7', port: 1080, protocol: 'socks5' } };
  const patchJson = { 'content-type': 'application/merge-patch+json' };

  it('an external SOCKS5 proxy is created as given', async () => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', { name: 'res-1', spec: socks });
    expect(res.status).toBe(201);
    expect(await json(res)).toMatchObject({ spec: { endpoint: { protocol: 'socks5', port: 1080 } } });
    expect((await h.store.inner.get('res-1'))?.proxy.spec).toMatchObject({
      endpoint: { protocol: 'socks5' },
    });
    expect(h.publisher.published).toEqual([{ proxy: 'res-1', reason: 'created' }]);
  });

  it('switching an external endpoint to SOCKS5 is a spec change: new generation, reconcile requested', async () => {
    const h = await withProxy('p1', external);
    const res = await h.call('PATCH', '/v1/proxies/p1/spec', { endpoint: { protocol: 'socks5' } }, patchJson);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ generation: 2, spec: { endpoint: { protocol: 'socks5' } } });
    expect(h.publisher.published).toEqual([{ proxy: 'p1', reason: 'spec-changed' }]);
  });

  it.each([
    ['PUT', { ...managed, protocol: 'socks5' }],
    ['PATCH', { protocol: 'socks5' }],
  ])(
    '%s of a managed proxy to socks5 is 400 protocol_unsupported, and nothing changes',
    async (method, body) => {
      const h = await withProxy('p1');
      const before = await h.store.snapshot();
      const res = await h.call(method, '/v1/proxies/p1/spec', body, {
        'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
      });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({
        error: 'invalid_request',
        issues: [expect.objectContaining({ path: 'protocol', code: 'protocol_unsupported' })],
      });
      expect(await h.store.snapshot()).toEqual(before);
      expect(h.publisher.published).toEqual([]);
    },
  );
});

describe('query parameters on the routes of one proxy', () => {
  // None of them takes one: a parameter the API does not read (`?dryRun=true`, `?force=1`) must not let the
  // request change state as if it had been understood — the list's rule, and noBody's.
  it.each([
    ['DELETE', '/v1/proxies/p1?dryRun=true', undefined, 'dryRun'],
    ['PUT', '/v1/proxies/p1/spec?dryRun=All', { ...managed, capacity: 9 }, 'dryRun'],
    ['PATCH', '/v1/proxies/p1/spec?force=1', { capacity: 9 }, 'force'],
    ['POST', '/v1/proxies/p1/reconcile?reason=drift', undefined, 'reason'],
    ['POST', '/v1/proxies?dryRun=true', { name: 'p2', spec: managed }, 'dryRun'],
    ['GET', '/v1/proxies/p1?fields=spec', undefined, 'fields'],
    ['DELETE', '/v1/proxies/p1?__proto__=1', undefined, '__proto__'],
  ])('%s %s is 400 invalid_request naming it, and nothing changes', async (method, path, body, name) => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call(method, path, body);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      error: 'invalid_request',
      issues: [
        expect.objectContaining({ path: name, message: expect.stringMatching(/unknown query parameter/) }),
      ],
    });
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });
});

describe('GET /v1/proxies/{name}', () => {
  it('returns the proxy', async () => {
    const h = await withProxy('p1');
    const res = await h.call('GET', '/v1/proxies/p1');
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ name: 'p1', generation: 1 });
  });

  it('answers 404 not_found for an unknown proxy and 400 for a name that cannot exist', async () => {
    const h = harness();
    expect(await json(await h.call('GET', '/v1/proxies/nope'))).toMatchObject({ error: 'not_found' });
    const bad = await h.call('GET', '/v1/proxies/Nope');
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ error: 'invalid_request', issues: [{ path: 'name' }] });
  });
});

describe('GET /v1/proxies', () => {
  async function fleet() {
    const h = harness();
    const specs: Array<[string, Record<string, unknown>]> = [
      ['a', { ...managed, attributes: { region: 'eu', tier: 'gold' } }],
      ['b', { ...managed, attributes: { region: 'eu' } }],
      ['c', { ...external, attributes: { region: 'us', tier: 'gold' } }],
    ];
    for (const [name, spec] of specs)
      expect((await h.call('POST', '/v1/proxies', { name, spec })).status).toBe(201);
    const c = await h.store.inner.get('c');
    await h.store.inner.writeStatus('c', { ...emptyStatus(), phase: 'Ready' }, c!.version);
    return h;
  }
  const names = async (res: Response) => {
    const body = (await res.json()) as { proxies: ProxyResource[]; count: number };
    expect(body.count).toBe(body.proxies.length);
    return body.proxies.map((p) => p.name);
  };

  it.each([
    ['', ['a', 'b', 'c']],
    ['?attr.region=eu', ['a', 'b']],
    ['?attr.region=eu&attr.tier=gold', ['a']],
    ['?attr.tier=gold&phase=Ready', ['c']],
    ['?phase=Pending', ['a', 'b']],
    ['?attr.region=mars', []],
    // Without the lease API wired nothing is leasable; the healthy flag still works.
    ['?leasable=true', []],
    ['?leasable=false&phase=Ready', ['c']],
  ])('filters %s → %j', async (query, expected) => {
    const h = await fleet();
    const res = await h.call('GET', `/v1/proxies${query}`);
    expect(res.status).toBe(200);
    expect(await names(res)).toEqual(expected);
  });

  it.each([
    ['?phase=Sleeping', 'phase'],
    ['?phase=Ready&phase=Pending', 'phase'],
    ['?healthy=yes', 'healthy'],
    ['?leasable=1', 'leasable'],
    ['?attr._hidden=x', 'attr._hidden'],
    ['?attr.region=eu&attr.region=us', 'attr.region'],
    // Names Hono's query parser drops before the schema sees them: checked on the raw query string.
    ['?__proto__=1', '__proto__'],
    ['?=x', ''],
    ['?constructor=1', 'constructor'],
    ['?healthy=true&healthy=false', 'healthy'],
    ['?leasable=true&leasable=true', 'leasable'],
    ['?attr.region=eu&__proto__=1', '__proto__'],
  ])('refuses %s with 400 at %s', async (query, path) => {
    const h = await fleet();
    const res = await h.call('GET', `/v1/proxies${query}`);
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.error).toBe('invalid_request');
    expect(body.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  // The listing's proxies are read through discovery, so a store that cannot answer is told as its lease
  // counts would be (counted, logged for the lease-store alert, Retry-After 2), whole or paged.
  it.each(['', '?pageSize=2'])('a store that cannot answer %s goes through discovery: 503', async (query) => {
    const failures: unknown[] = [];
    const discovery: DiscoveryView = {
      read: async (read) => {
        try {
          return await read();
        } catch (err) {
          failures.push(err);
          throw new ApiError(503, 'unavailable', 'down', { retryAfterSeconds: 2 });
        }
      },
      list: async () => [],
    };
    const h = harness({ leases: { ...everySurface().deps.leases!, discovery } });
    const down = async () => {
      throw new StoreError('unavailable', 'Firestore unavailable');
    };
    h.store.inner.listAll = down;
    h.store.inner.listPage = down;
    const res = await h.call('GET', `/v1/proxies${query}`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(failures).toEqual([expect.objectContaining({ kind: 'unavailable' })]);
  });
});

describe('PUT /v1/proxies/{name}/spec', () => {
  it('replaces the spec, bumps the generation and publishes "spec-changed"', async () => {
    const h = await withProxy('p1');
    const res = await h.call('PUT', '/v1/proxies/p1/spec', { ...managed, capacity: 9 });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ generation: 2, spec: { capacity: 9 } });
    expect((await h.store.inner.get('p1'))?.proxy).toMatchObject({ generation: 2, spec: { capacity: 9 } });
    expect(h.publisher.published).toEqual([{ proxy: 'p1', reason: 'spec-changed' }]);
  });

  it('treats the same spec (defaults spelled out, keys reordered) as a no-op: no write, no bump, no publish', async () => {
    const h = await withProxy('p1');
    await observed(h, 'p1');
    const before = await h.store.snapshot();
    const same = {
      capacity: 4,
      zone: 'us-central1-a',
      machineType: 'e2-small',
      mode: 'managed',
      attributes: {},
      credentialsRef: { version: 'latest', secret: 'proxy-creds' },
      // What an absent exitIp means, spelt out.
      healthCheck: { exitIp: 'proxy' },
    };
    const res = await h.call('PUT', '/v1/proxies/p1/spec', same);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ generation: 1 });
    expect(h.store.writeCalls).toEqual([]);
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });

  it('publishes again on a no-op while reconcile has not seen the generation (recovers a lost publish)', async () => {
    const h = await withProxy('p1');
    const res = await h.call('PUT', '/v1/proxies/p1/spec', managed);
    expect(res.status).toBe(200);
    expect(h.store.writeCalls).toEqual([]);
    expect(h.publisher.published).toEqual([{ proxy: 'p1', reason: 'spec-changed' }]);
  });

  it.each([
    [external, 400, 'immutable_field'],
    [{ ...managed, zone: 'europe-west1-b' }, 400, 'immutable_field'],
    [{ ...managed, provider: 'aws' }, 400, 'immutable_field'],
    [{ ...managed, status: {} }, 400, 'invalid_request'],
    [{ ...managed, generation: 3 }, 400, 'invalid_request'],
  ])('refuses %j with %i %s and writes nothing', async (body, status, error) => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call('PUT', '/v1/proxies/p1/spec', body);
    expect(res.status).toBe(status);
    expect(await json(res)).toMatchObject({ error });
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });

  it('answers 404 for an unknown proxy and 409 deletion_requested for one being deleted', async () => {
    const h = await withProxy('p1');
    expect((await h.call('PUT', '/v1/proxies/p2/spec', managed)).status).toBe(404);
    await h.call('DELETE', '/v1/proxies/p1');
    const res = await h.call('PUT', '/v1/proxies/p1/spec', { ...managed, capacity: 2 });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ error: 'deletion_requested' });
  });

  it('re-reads and retries when a concurrent write moves the version, losing neither update', async () => {
    const h = await withProxy('p1');
    h.store.interceptNext('replaceSpec', async () => {
      const cur = await h.store.inner.get('p1');
      await h.store.inner.writeStatus('p1', { ...emptyStatus(), phase: 'Provisioning' }, cur!.version);
    });
    const res = await h.call('PUT', '/v1/proxies/p1/spec', { ...managed, capacity: 9 });
    expect(res.status).toBe(200);
    const stored = (await h.store.inner.get('p1'))?.proxy;
    expect(stored).toMatchObject({ generation: 2, spec: { capacity: 9 }, status: { phase: 'Provisioning' } });
    expect(h.store.writeCalls.map((w) => w.op)).toEqual(['replaceSpec', 'replaceSpec']);
    expect(h.publisher.published).toEqual([{ proxy: 'p1', reason: 'spec-changed' }]);
  });

  it('gives up with 409 conflict after a bounded number of attempts', async () => {
    const h = await withProxy('p1');
    for (let i = 0; i < 5; i++) {
      h.store.interceptNext('replaceSpec', async () => {
        const cur = await h.store.inner.get('p1');
        await h.store.inner.writeStatus('p1', { ...emptyStatus(), observedGeneration: i }, cur!.version);
      });
    }
    const res = await h.call('PUT', '/v1/proxies/p1/spec', { ...managed, capacity: 9 });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ error: 'conflict' });
    expect(h.store.writeCalls).toHaveLength(5);
    expect((await h.store.inner.get('p1'))?.proxy).toMatchObject({ generation: 1, spec: { capacity: 4 } });
    expect(h.publisher.published).toEqual([]);
  });
});

describe('PATCH /v1/proxies/{name}/spec', () => {
  const patch = (h: ReturnType<typeof harness>, body: unknown, type = 'application/merge-patch+json') =>
    h.call('PATCH', '/v1/proxies/p1/spec', body, { 'content-type': type });

  it('merges (RFC 7396), re-validates, and bumps the generation once', async () => {
    const h = await withProxy('p1', { ...managed, attributes: { region: 'eu', legacy: 'yes' } });
    const res = await patch(h, {
      capacity: 8,
      attributes: { legacy: null, tier: 'gold' },
      healthCheck: { intervalSeconds: 10 },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as ProxyResource;
    expect(body.generation).toBe(2);
    expect(body.spec.capacity).toBe(8);
    expect(body.spec.attributes).toEqual({ region: 'eu', tier: 'gold' });
    expect(body.spec.healthCheck).toMatchObject({ intervalSeconds: 10, failureThreshold: 3 });
    expect(h.publisher.published).toEqual([{ proxy: 'p1', reason: 'spec-changed' }]);
  });

  it('accepts application/json too', async () => {
    const h = await withProxy('p1');
    expect((await patch(h, { capacity: 5 }, 'application/json')).status).toBe(200);
  });

  it.each([
    ['PATCH', 'application/merge-patch+json'],
    ['PUT', 'application/json'],
  ])(
    '%s refuses a repeated key of the spec (400 duplicate_key), not writing its last value',
    async (method, type) => {
      const h = await withProxy('p1');
      const body = `{"mode":"managed","zone":"us-central1-a","credentialsRef":{"secret":"proxy-creds"},"capacity":1,"capacity":500}`;
      const res = await h.call(method, '/v1/proxies/p1/spec', body, { 'content-type': type });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({
        error: 'invalid_request',
        issues: [{ path: 'capacity', code: 'duplicate_key' }],
      });
      expect(h.store.writeCalls).toEqual([]);
      expect(h.publisher.published).toEqual([]);
    },
  );

  it('is a no-op for an empty patch or one that sets what is already there', async () => {
    const h = await withProxy('p1');
    await observed(h, 'p1');
    for (const body of [{}, { capacity: 4 }, { attributes: { missing: null } }]) {
      const res = await patch(h, body);
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ generation: 1 });
    }
    expect(h.store.writeCalls).toEqual([]);
    expect(h.publisher.published).toEqual([]);
  });

  it.each([
    [{ mode: 'external' }, 'immutable_field', 'mode'],
    [{ mode: null }, 'immutable_field', 'mode'],
    [{ zone: 'europe-west1-b' }, 'immutable_field', 'zone'],
    [{ provider: 'aws', capacity: 9 }, 'immutable_field', 'provider'],
    [{ zone: null }, 'invalid_request', 'zone'],
    [{ capacity: 'many' }, 'invalid_request', 'capacity'],
    [{ status: { phase: 'Ready' } }, 'invalid_request', 'status'],
    [{ cloudInit: { inline: 'x', secretRef: { secret: 's' } } }, 'invalid_request', 'cloudInit'],
    [['capacity', 5], 'invalid_request', ''],
    ['"capacity"', 'invalid_request', ''],
  ])('refuses %j with 400 %s at "%s" and writes nothing', async (body, error, path) => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await patch(h, body);
    expect(res.status).toBe(400);
    const err = await json(res);
    expect(err.error).toBe(error);
    expect(err.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });
});

describe('If-Match echoed in a 412', () => {
  // "echoed input is clipped" (docs/api.md § Errors): an If-Match of a few thousand tags, or one long tag,
  // came back whole in the message.
  it.each([
    ['one 12 KB tag', `"${'x'.repeat(12_000)}"`],
    ['2,000 tags', Array.from({ length: 2000 }, (_, i) => `"${i + 10}"`).join(', ')],
  ])('%s: the message stays short', async (_label, ifMatch) => {
    const h = await withProxy('p1');
    const res = await h.call('DELETE', '/v1/proxies/p1', undefined, { 'if-match': ifMatch });
    expect(res.status).toBe(412);
    const body = await json(res);
    expect(body).toMatchObject({ error: 'precondition_failed', generation: 1 });
    expect(String(body.message).length).toBeLessThan(400);
  });
});

describe('DELETE /v1/proxies/{name}', () => {
  it('sets deletionRequestedAt, answers 202 and publishes; a second DELETE keeps the first timestamp', async () => {
    const h = await withProxy('p1');
    const first = await h.call('DELETE', '/v1/proxies/p1');
    expect(first.status).toBe(202);
    expect(await json(first)).toMatchObject({ name: 'p1', deletionRequestedAt: '2026-02-01T12:00:00.000Z' });
    h.clock.advance(60_000);
    const second = await h.call('DELETE', '/v1/proxies/p1');
    expect(second.status).toBe(202);
    expect(await json(second)).toMatchObject({ deletionRequestedAt: '2026-02-01T12:00:00.000Z' });
    expect(h.store.writeCalls.map((w) => w.op)).toEqual(['requestDeletion']);
    expect(h.publisher.published).toEqual([
      { proxy: 'p1', reason: 'delete-requested' },
      { proxy: 'p1', reason: 'delete-requested' },
    ]);
  });

  it.each([
    // (GET cannot carry a body in the Fetch API, so the platform drops one before Hono sees it.)
    ['DELETE', '/v1/proxies/p1'],
    ['POST', '/v1/proxies/p1/reconcile'],
  ])('%s %s refuses a request body with 400 and does nothing', async (method, path) => {
    const h = await withProxy('p1');
    const before = await h.store.snapshot();
    const res = await h.call(method, path, { force: true });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({
      error: 'invalid_request',
      issues: [{ code: 'unexpected_body' }],
    });
    expect(await h.store.snapshot()).toEqual(before);
    expect(h.publisher.published).toEqual([]);
  });

  it('with If-Match too: a second DELETE keeps the first timestamp, writes nothing and publishes again', async () => {
    const h = await withProxy('p1');
    const tag = etagOf(proxyTag((await h.store.inner.get('p1'))!.proxy));
    const first = await h.call('DELETE', '/v1/proxies/p1', undefined, { 'if-match': tag });
    expect(first.status).toBe(202);
    h.clock.advance(60_000);
    const second = await h.call('DELETE', '/v1/proxies/p1', undefined, { 'if-match': tag });
    expect(second.status).toBe(202);
    expect(second.headers.get('etag')).toBe(tag);
    expect(await json(second)).toMatchObject({ deletionRequestedAt: '2026-02-01T12:00:00.000Z' });
    expect((await h.store.inner.get('p1'))!.proxy.deletionRequestedAt).toEqual(
      new Date('2026-02-01T12:00:00.000Z'),
    );
    expect(h.store.writeCalls.map((w) => w.op)).toEqual(['requestDeletion']);
    expect(h.publisher.published).toHaveLength(2);
  });

  // A conditional DELETE's write is conditioned on the version read, so another write landing every time
  // in between (here a status write) exhausts the attempts: 409 conflict, as for a spec write, nothing set.
  it('answers 409 conflict when a write lands between every read and the conditional deletion write', async () => {
    const h = await withProxy('p1');
    for (let i = 0; i < 5; i++) {
      h.store.interceptNext('requestDeletion', async () => {
        const cur = (await h.store.inner.get('p1'))!;
        const status = { ...cur.proxy.status, latencyMillis: i };
        expect(await h.store.inner.writeStatus('p1', status, cur.version)).toBe('written');
      });
    }
    const tag = etagOf(proxyTag((await h.store.inner.get('p1'))!.proxy));
    const res = await h.call('DELETE', '/v1/proxies/p1', undefined, { 'if-match': tag });
    expect(res.status).toBe(409);
    expect(await json(res)).toMatchObject({ error: 'conflict' });
    expect((await h.store.inner.get('p1'))!.proxy.deletionRequestedAt).toBeNull();
    expect(h.publisher.published).toEqual([]);
  });

  // Reconcile removes an external proxy's document at once; a create of the same name can land before the
  // DELETE's re-read, which then read the new proxy: its body and ETag answered this deletion.
  it('answers for the proxy it deleted, not one created under the name since', async () => {
    const h = await withProxy('p1');
    const deleted = (await h.store.inner.get('p1'))!.proxy;
    h.store.interceptNext('get', () => {});
    h.store.interceptNext('get', async () => {
      const gone = (await h.store.inner.get('p1'))!;
      expect(await h.store.inner.deleteDocument('p1', gone.version)).toBe('written');
      await h.store.inner.create(aProxy({ name: 'p1', uid: '99999999-9999-4999-8999-999999999999' }));
    });
    const res = await h.call('DELETE', '/v1/proxies/p1');
    expect(res.status).toBe(202);
    expect(await json(res)).toMatchObject({
      uid: deleted.uid,
      deletionRequestedAt: '2026-02-01T12:00:00.000Z',
    });
    expect(res.headers.get('etag')).toBe(etagOf(proxyTag(deleted)));
  });

  it('answers 404 for an unknown proxy and publishes nothing', async () => {
    const h = harness();
    const res = await h.call('DELETE', '/v1/proxies/ghost');
    expect(res.status).toBe(404);
    expect(h.publisher.published).toEqual([]);
  });
});

describe('POST /v1/proxies/{name}/reconcile', () => {
  it('publishes a manual reconcile request', async () => {
    const h = await withProxy('p1');
    const res = await h.call('POST', '/v1/proxies/p1/reconcile');
    expect(res.status).toBe(202);
    expect(await json(res)).toEqual({ proxy: 'p1', reason: 'manual' });
    expect(h.publisher.published).toEqual([{ proxy: 'p1', reason: 'manual' }]);
    expect(h.store.writeCalls).toEqual([]);
  });

  it('answers 404 for an unknown proxy', async () => {
    expect((await harness().call('POST', '/v1/proxies/ghost/reconcile')).status).toBe(404);
  });

  // Nothing is written, so nothing re-derives a request Pub/Sub refused: the caller must hear it.
  it('answers 503 with Retry-After when Pub/Sub refused the request, and logs it', async () => {
    const h = await withProxy('p1');
    h.publisher.failNext(new PublishError('unavailable', 'pubsub down'));
    const res = await h.call('POST', '/v1/proxies/p1/reconcile');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await json(res)).toMatchObject({ error: 'unavailable' });
    expect(h.publisher.published).toEqual([]);
    expect(h.log.lines).toContainEqual(
      expect.objectContaining({ severity: 'ERROR', proxy: 'p1', reason: 'manual', errorKind: 'unavailable' }),
    );
  });

  it('answers 202 for a request not confirmed in time: the library may still send it', async () => {
    const h = await withProxy('p1');
    h.publisher.failNext(new PublishError('unconfirmed', 'no answer in 10 s'));
    const res = await h.call('POST', '/v1/proxies/p1/reconcile');
    expect(res.status).toBe(202);
    expect(h.log.lines).toContainEqual(
      expect.objectContaining({ severity: 'ERROR', proxy: 'p1', reason: 'manual', errorKind: 'unconfirmed' }),
    );
  });
});
