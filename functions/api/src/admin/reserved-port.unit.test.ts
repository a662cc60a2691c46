// A managed proxy on port 22 under the default cloud-init can never be provisioned: its renderer refuses
// the port (sshd has it), reconcile turns that into a latched PermanentError and the proxy leaves leasing.
// The admin API refuses such a spec instead, with or without MANAGED_PROXY_PORTS, and changes nothing.
import { describe, expect, it } from 'vitest';
import { aProxy, managedSpec } from '../../../../shared/src/testing/proxy-fixtures.js';
import { harness } from '../testing/harness.js';

const creds = { secret: 's', version: 'latest' };
const managed = { mode: 'managed', zone: 'us-central1-a', credentialsRef: creds };
const MERGE = { 'content-type': 'application/merge-patch+json' };

/** `p1` stored as `spec`, written directly (it may predate the check). */
async function withStored(spec = managedSpec({ credentialsRef: creds }), ports?: number[]) {
  const h = harness(ports ? { managedProxyPorts: ports } : {});
  await h.store.inner.create(aProxy({ name: 'p1', spec }));
  return h;
}

describe('a managed port 22 with the default cloud-init is refused', () => {
  it.each<[string, string, string, unknown, Record<string, string>, string, number[] | undefined]>([
    [
      'POST',
      'POST',
      '/v1/proxies',
      { name: 'p22', spec: { ...managed, port: 22 } },
      {},
      'spec.port',
      undefined,
    ],
    [
      'POST where the firewall opens 22',
      'POST',
      '/v1/proxies',
      { name: 'p22', spec: { ...managed, port: 22 } },
      {},
      'spec.port',
      [22, 3128],
    ],
    ['PUT', 'PUT', '/v1/proxies/p1/spec', { ...managed, port: 22 }, {}, 'port', undefined],
    ['PATCH', 'PATCH', '/v1/proxies/p1/spec', { port: 22 }, MERGE, 'port', undefined],
    [
      'PATCH with a capacity too',
      'PATCH',
      '/v1/proxies/p1/spec',
      { port: 22, capacity: 9 },
      MERGE,
      'port',
      [22, 3128],
    ],
  ])(
    '%s: 400 invalid_request, issue port_reserved, nothing written or published',
    async (_n, method, path, body, headers, issuePath, ports) => {
      const h = await withStored(undefined, ports);
      const before = await h.store.snapshot();
      const res = await h.call(method, path, body, headers);
      expect(res.status).toBe(400);
      const answer = (await res.json()) as { error: string; message: string; issues: unknown[] };
      expect(answer).toMatchObject({
        error: 'invalid_request',
        issues: [{ path: issuePath, code: 'port_reserved' }],
      });
      expect(answer.message).toMatch(/22.*sshd/);
      expect(h.store.writeCalls).toEqual([]);
      expect(await h.store.snapshot()).toEqual(before);
      expect((await h.store.inner.get('p1'))?.proxy.generation).toBe(1);
      expect(h.publisher.published).toEqual([]);
    },
  );

  it('PATCH dropping the own cloud-init of a proxy on 22 is refused too', async () => {
    const h = await withStored(
      managedSpec({ port: 22, credentialsRef: creds, cloudInit: { inline: '#!/bin/sh\n' } }),
    );
    const res = await h.call('PATCH', '/v1/proxies/p1/spec', { cloudInit: null }, MERGE);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ issues: [{ path: 'port', code: 'port_reserved' }] });
    expect(h.publisher.published).toEqual([]);
  });
});

describe('port 22 accepted where nothing renders the default cloud-init for it', () => {
  it.each<[string, unknown]>([
    [
      'a managed proxy with its own cloud-init',
      { ...managed, port: 22, cloudInit: { inline: '#!/bin/sh\n' } },
    ],
    ['an external proxy', { mode: 'external', endpoint: { host: '203.0.113.7', port: 22 } }],
  ])('POST of %s: 201', async (_n, spec) => {
    const h = harness();
    const res = await h.call('POST', '/v1/proxies', { name: 'p22', spec });
    expect(res.status).toBe(201);
  });

  it('a proxy stored on 22 before the check keeps it through other edits, and can move off it', async () => {
    const h = await withStored(managedSpec({ port: 22, credentialsRef: creds }));
    expect((await h.call('PATCH', '/v1/proxies/p1/spec', { capacity: 9 }, MERGE)).status).toBe(200);
    expect((await h.call('PATCH', '/v1/proxies/p1/spec', { port: 3128 }, MERGE)).status).toBe(200);
    expect((await h.call('PATCH', '/v1/proxies/p1/spec', { port: 22 }, MERGE)).status).toBe(400);
  });
});
