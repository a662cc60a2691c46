// MANAGED_PROXY_PORTS on the real store: with the ports the proxy firewall opens configured (Terraform sets
// its var.proxy_port), a managed proxy on any other port is refused by POST, PUT and PATCH with
// 400 port_not_allowed and the allowed ports — and nothing is written to Firestore (the emulator, through
// the real adapter) nor published — while allowed ports, external proxies, and edits that keep a port
// stored before the policy go through. The same for an external endpoint host that is no DNS name or IP
// address. Requests go over a real socket.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anyOf } from '../../functions/api/src/auth/authenticator.js';
import { staticTokenAuthenticator } from '../../functions/api/src/auth/static-tokens.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { ObservedProxyStore } from '../../shared/src/testing/observed-proxy-store.js';
import { aProxy, externalSpec, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { testProjectId } from '../support/emulators.js';

const TOKEN = 'managed-ports-admin-token-0123456789';
const ALLOWED = [3128, 8443];
// credentialsRef: the default cloud-init needs it (the API refuses a managed spec that could never boot).
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};
const MERGE = 'application/merge-patch+json';

describe('managed proxy ports: the API refuses a port the proxy firewall does not open', () => {
  const projectId = testProjectId('demo-apiports');
  const db = new Firestore({ projectId });
  const store = new ObservedProxyStore(new FirestoreProxyStore(db));
  const publisher = new RecordingReconcilePublisher();
  const log = memoryLogger();
  let api: ApiServer;

  const call = (method: string, path: string, body: unknown, type = 'application/json') =>
    fetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type },
      body: JSON.stringify(body),
    });

  /** `call`, then: a 400 whose body matches `expected`, and nothing written to Firestore nor published. */
  const expectRefused = async (args: Parameters<typeof call>, expected: Record<string, unknown>) => {
    const before = await store.snapshot();
    const [writes, published] = [store.writeCalls.length, publisher.published.length];
    const res = await call(...args);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject(expected);
    expect(store.writeCalls.slice(writes)).toEqual([]);
    expect(await store.snapshot()).toEqual(before);
    expect(publisher.published.slice(published)).toEqual([]);
  };

  beforeAll(async () => {
    // `legacy` predates the policy (written straight to the store, as an older API would have).
    await store.inner.create(aProxy({ name: 'seeded', spec: managedSpec() }));
    await store.inner.create(aProxy({ name: 'legacy', spec: managedSpec({ port: 8080 }) }));
    await store.inner.create(aProxy({ name: 'outside', spec: externalSpec() }));
    const auth = anyOf([staticTokenAuthenticator([{ name: 'test', token: TOKEN }])]);
    api = await startApiServer({
      deps: { version: 't', store, publisher, clock: systemClock, auth, log, managedProxyPorts: ALLOWED },
    });
  });

  afterAll(async () => {
    await api?.close();
    await db.terminate();
  });

  const refused: Array<[string, string, string, unknown, string, string]> = [
    [
      'POST, port 8080',
      'POST',
      '/v1/proxies',
      { name: 'fresh', spec: { ...managed, port: 8080 } },
      'application/json',
      'spec.port',
    ],
    [
      'POST, port 80',
      'POST',
      '/v1/proxies',
      { name: 'fresh', spec: { ...managed, port: 80 } },
      'application/json',
      'spec.port',
    ],
    [
      'PUT, port 8080',
      'PUT',
      '/v1/proxies/seeded/spec',
      { ...managed, port: 8080 },
      'application/json',
      'port',
    ],
    ['PATCH, port 8080', 'PATCH', '/v1/proxies/seeded/spec', { port: 8080 }, MERGE, 'port'],
    [
      'PATCH (application/json), port 65535',
      'PATCH',
      '/v1/proxies/seeded/spec',
      { port: 65535 },
      'application/json',
      'port',
    ],
    [
      'PATCH of a proxy on an old port, to another disallowed port',
      'PATCH',
      '/v1/proxies/legacy/spec',
      { port: 9090 },
      MERGE,
      'port',
    ],
  ];

  it.each(refused)(
    '%s: 400 port_not_allowed, nothing written or published',
    (_n, method, path, body, type, issuePath) =>
      expectRefused([method, path, body, type], {
        error: 'port_not_allowed',
        message: expect.stringContaining('tcp:3128, tcp:8443'),
        allowedPorts: ALLOWED,
        issues: [{ path: issuePath, code: 'port_not_allowed' }],
      }),
  );

  it('the refusals logged no ERROR and left no "fresh" document', async () => {
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
    expect(await store.inner.get('fresh')).toBeNull();
  });

  it('accepts an allowed port on POST, PUT and PATCH, writes it and publishes', async () => {
    const created = await call('POST', '/v1/proxies', { name: 'ok', spec: { ...managed, port: 8443 } });
    expect(created.status).toBe(201);
    const put = await call('PUT', '/v1/proxies/ok/spec', { ...managed, port: 3128 });
    expect(put.status).toBe(200);
    const patched = await call('PATCH', '/v1/proxies/ok/spec', { port: 8443 }, MERGE);
    expect(patched.status).toBe(200);
    const stored = await store.inner.get('ok');
    expect(stored?.proxy).toMatchObject({ generation: 3, spec: { mode: 'managed', port: 8443 } });
    expect(publisher.published.filter((p) => p.proxy === 'ok')).toEqual([
      { proxy: 'ok', reason: 'created' },
      { proxy: 'ok', reason: 'spec-changed' },
      { proxy: 'ok', reason: 'spec-changed' },
    ]);
  });

  it('leaves external proxies alone: their port is wherever they listen', async () => {
    const endpoint = { host: '203.0.113.9', port: 8080 };
    const created = await call('POST', '/v1/proxies', { name: 'ext', spec: { mode: 'external', endpoint } });
    expect(created.status).toBe(201);
    const patched = await call('PATCH', '/v1/proxies/outside/spec', { endpoint: { port: 1 } }, MERGE);
    expect(patched.status).toBe(200);
    expect((await store.inner.get('outside'))?.proxy.spec).toMatchObject({ endpoint: { port: 1 } });
  });

  it('lets a proxy stored on an old port change other fields, and move to an allowed port', async () => {
    const patched = await call('PATCH', '/v1/proxies/legacy/spec', { capacity: 9 }, MERGE);
    expect(patched.status).toBe(200);
    expect((await store.inner.get('legacy'))?.proxy.spec).toMatchObject({ port: 8080, capacity: 9 });
    const moved = await call('PATCH', '/v1/proxies/legacy/spec', { port: 3128 }, MERGE);
    expect(moved.status).toBe(200);
    expect((await store.inner.get('legacy'))?.proxy.spec).toMatchObject({ port: 3128, capacity: 9 });
    const back = await call('PATCH', '/v1/proxies/legacy/spec', { port: 8080 }, MERGE);
    expect(back.status).toBe(400);
    expect((await store.inner.get('legacy'))?.proxy.spec).toMatchObject({ port: 3128 });
  });

  it.each<[string, string, string, unknown, string, string]>([
    [
      'POST, a port in the host',
      'POST',
      '/v1/proxies',
      { name: 'ext-bad', spec: { mode: 'external', endpoint: { host: 'p.example.com:3128', port: 3128 } } },
      'application/json',
      'spec.endpoint.host',
    ],
    [
      'PUT, a URL for a host',
      'PUT',
      '/v1/proxies/outside/spec',
      { mode: 'external', endpoint: { host: 'http://p.example.com', port: 3128 } },
      'application/json',
      'endpoint.host',
    ],
    [
      'PATCH, a zero-padded address (dialled at 192.168.1.8)',
      'PATCH',
      '/v1/proxies/outside/spec',
      { endpoint: { host: '192.168.001.010' } },
      MERGE,
      'endpoint.host',
    ],
    [
      'PATCH, credentials in the host',
      'PATCH',
      '/v1/proxies/outside/spec',
      { endpoint: { host: 'u:pw@p.example.com' } },
      MERGE,
      'endpoint.host',
    ],
  ])(
    'an external endpoint host that is no host, %s: 400 invalid_request, nothing written',
    (_n, method, path, body, type, issuePath) =>
      expectRefused([method, path, body, type], {
        error: 'invalid_request',
        issues: [{ path: issuePath, code: 'invalid_host' }],
      }),
  );

  it('quotes a refused host without its userinfo: the password sent in the wrong field is not sent back', async () => {
    const res = await call(
      'PATCH',
      '/v1/proxies/outside/spec',
      { endpoint: { host: 'alice:s3c@ret@p.example.com' } },
      MERGE,
    );
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).not.toContain('s3c');
    expect(text).not.toContain('ret@');
    expect(text).not.toContain('alice');
    expect(JSON.parse(text)).toMatchObject({
      error: 'invalid_request',
      issues: [
        {
          path: 'endpoint.host',
          code: 'invalid_host',
          message: expect.stringContaining('"…@p.example.com"'),
        },
      ],
    });
  });

  it("quotes a provider's host:port:user:password line without the password", async () => {
    const res = await call(
      'PATCH',
      '/v1/proxies/outside/spec',
      { endpoint: { host: 'p.example.com:3128:alice:s3cret' } },
      MERGE,
    );
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('alice');
    expect(JSON.parse(text)).toMatchObject({
      issues: [{ code: 'invalid_host', message: expect.stringContaining('"p.example.com:…"') }],
    });
  });
});
