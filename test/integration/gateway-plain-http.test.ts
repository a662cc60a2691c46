// GATEWAY_PLAIN_HTTP=absolute-uri: plain HTTP reaches the upstream in absolute form with the host name
// (for upstreams that filter destinations themselves, as our squid does), so the upstream forwards it
// instead of tunnelling; the SSRF guard still resolves and refuses at the gateway first, and an upstream
// that refuses our credentials is a 502 upstream_auth_failed, never its 407 passed to the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

const AUTH = basicAuth('crawler', 's3cret');
const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

describe('plain HTTP in absolute form (GATEWAY_PLAIN_HTTP=absolute-uri)', () => {
  let targets: Targets;
  let upstream: ForwardProxy;
  let gw: GatewayProcess;
  const get = (authority: string, path = '/page?x=1') =>
    rawExchange(
      gw.proxyPort,
      `GET http://${authority}${path} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${AUTH}\r\nX-Keep: yes\r\n\r\n`,
    );

  beforeAll(async () => {
    targets = await startTargets();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await upstream.listen();
    const snapshot = snapshotFile({
      upstreams: [`http://up:up-pass@127.0.0.1:${port}`, `http://up:wrong@127.0.0.1:${port}`],
      routing: [
        { name: 'bad', match: { hosts: ['127.0.0.2'] }, selector: { pool: 'bad' }, policy: 'round-robin' },
        { name: 'default', match: { hosts: ['*'] }, selector: { pool: 'good' }, policy: 'least-active' },
      ],
      attributes: (i) => ({ pool: i === 0 ? 'good' : 'bad' }),
    });
    gw = await startGateway(snapshot, {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_PLAIN_HTTP: 'absolute-uri',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort},127.0.0.2:9`,
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await targets?.close();
  });

  it('forwards through the upstream (no tunnel), the target sees its own request and no credentials', async () => {
    const before = upstream.stats();
    const r = await get(`127.0.0.1:${targets.httpPort}`);
    expect(r.text).toMatch(/^HTTP\/1\.1 200/);
    const page = bodyOf(r.text);
    expect(page).toMatchObject({ method: 'GET', url: '/page?x=1', proxyAuthorization: null });
    expect(page.headers['x-keep']).toBe('yes');
    const after = upstream.stats();
    expect(after.forwarded).toBe(before.forwarded + 1);
    expect(after.tunnels).toBe(before.tunnels);
  });

  it('still refuses private names at the gateway, before any upstream sees them', async () => {
    const before = upstream.stats();
    const r = await get(`localhost:${targets.httpPort}`);
    expect(r.text).toMatch(/^HTTP\/1\.1 403/);
    expect(r.text).toContain('ssrf_refused');
    expect(upstream.stats().forwarded).toBe(before.forwarded);
  });

  it('an upstream refusing our credentials is a 502 upstream_auth_failed', async () => {
    const r = await get('127.0.0.2:9');
    expect(r.text).toMatch(/^HTTP\/1\.1 502/);
    expect(r.text).toContain('X-Proxyplane-Error: upstream_auth_failed');
  });
});
