// MANAGED_PROXY_PORTS through the admin routes (in-memory store; the emulator version is
// test/integration/api-managed-ports.test.ts): every write that sets a managed proxy's port is checked.
import { describe, expect, it } from 'vitest';
import { aProxy, managedSpec } from '../../../../shared/src/testing/proxy-fixtures.js';
import { harness } from '../testing/harness.js';

// credentialsRef: the default cloud-init needs it (the API refuses a managed spec that could never boot).
const managed = {
  mode: 'managed',
  zone: 'us-central1-a',
  credentialsRef: { secret: 'proxy-creds', version: 'latest' },
};
const external = { mode: 'external', endpoint: { host: '203.0.113.7', port: 8080 } };
const MERGE = { 'content-type': 'application/merge-patch+json' };

/** A harness allowing only 3128, with `p1` stored as `spec` (written directly: it may predate the policy). */
async function withStored(spec = managedSpec()) {
  const h = harness({ managedProxyPorts: [3128] });
  await h.store.inner.create(aProxy({ name: 'p1', spec }));
  return h;
}

describe('writes refused for a managed port the firewall does not open', () => {
  it.each<[string, string, string, unknown, Record<string, string>, string]>([
    ['POST', 'POST', '/v1/proxies', { name: 'p2', spec: { ...managed, port: 8080 } }, {}, 'spec.port'],
    ['PUT', 'PUT', '/v1/proxies/p1/spec', { ...managed, port: 8080 }, {}, 'port'],
    ['PATCH', 'PATCH', '/v1/proxies/p1/spec', { port: 8080 }, MERGE, 'port'],
    ['PATCH with a capacity too', 'PATCH', '/v1/proxies/p1/spec', { port: 8080, capacity: 9 }, MERGE, 'port'],
  ])(
    '%s: 400 port_not_allowed with the allowed ports, nothing written or published',
    async (_n, method, path, body, headers, issuePath) => {
      const h = await withStored();
      const before = await h.store.snapshot();
      const res = await h.call(method, path, body, headers);
      expect(res.status).toBe(400);
      const answer = (await res.json()) as Record<string, unknown>;
      expect(answer).toMatchObject({
        error: 'port_not_allowed',
        allowedPorts: [3128],
        issues: [{ path: issuePath, code: 'port_not_allowed' }],
      });
      expect(answer.message).toMatch(/8080 is not open to managed proxies.*tcp:3128/);
      expect(h.store.writeCalls).toEqual([]);
      expect(await h.store.snapshot()).toEqual(before);
      expect(h.publisher.published).toEqual([]);
    },
  );

  it('refuses a default port the policy does not list (PATCH {"port": null} resets to 3128)', async () => {
    const h = harness({ managedProxyPorts: [8080] });
    const created = await h.call('POST', '/v1/proxies', { name: 'p1', spec: { ...managed, port: 8080 } });
    expect(created.status).toBe(201);
    const res = await h.call('PATCH', '/v1/proxies/p1/spec', { port: null }, MERGE);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'port_not_allowed', allowedPorts: [8080] });
    const bare = await h.call('POST', '/v1/proxies', { name: 'p2', spec: managed });
    expect(bare.status).toBe(400);
  });
});

describe('writes accepted', () => {
  it.each<[string, string, string, unknown, Record<string, string>, number]>([
    [
      'POST on an allowed port',
      'POST',
      '/v1/proxies',
      { name: 'p2', spec: { ...managed, port: 3128 } },
      {},
      201,
    ],
    ['POST of an external proxy on any port', 'POST', '/v1/proxies', { name: 'p2', spec: external }, {}, 201],
    ['PATCH of another field', 'PATCH', '/v1/proxies/p1/spec', { capacity: 9 }, MERGE, 200],
  ])('%s', async (_n, method, path, body, headers, status) => {
    const h = await withStored();
    const res = await h.call(method, path, body, headers);
    expect(res.status).toBe(status);
    expect(h.publisher.published).toHaveLength(1);
  });

  it('any port when no policy is configured (the local plane, tests)', async () => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', { name: 'p1', spec: { ...managed, port: 8080 } });
    expect(res.status).toBe(201);
  });

  it('a proxy stored on a port before the policy keeps it through other edits, and can move to an allowed one', async () => {
    const h = await withStored(managedSpec({ port: 8080 }));
    const patched = await h.call('PATCH', '/v1/proxies/p1/spec', { capacity: 9 }, MERGE);
    expect(patched.status).toBe(200);
    const put = await h.call('PUT', '/v1/proxies/p1/spec', { ...managed, port: 8080, capacity: 7 });
    expect(put.status).toBe(200);
    const moved = await h.call('PATCH', '/v1/proxies/p1/spec', { port: 3128 }, MERGE);
    expect(moved.status).toBe(200);
    expect((await h.store.inner.get('p1'))?.proxy.spec).toMatchObject({ port: 3128, capacity: 7 });
    const back = await h.call('PATCH', '/v1/proxies/p1/spec', { port: 8080 }, MERGE);
    expect(back.status).toBe(400);
  });

  it('an external proxy stored under a policy changes its endpoint port freely', async () => {
    const h = harness({ managedProxyPorts: [3128] });
    expect((await h.call('POST', '/v1/proxies', { name: 'e1', spec: external })).status).toBe(201);
    const res = await h.call('PATCH', '/v1/proxies/e1/spec', { endpoint: { port: 1 } }, MERGE);
    expect(res.status).toBe(200);
  });
});
