// Plain HTTP per upstream (GATEWAY_PLAIN_HTTP unset = auto): an upstream the snapshot marks as filtering
// destinations itself (filtersDestinations, as the control plane marks a managed squid) gets plain HTTP in
// absolute form with the host name, so it forwards instead of tunnelling; an upstream without the mark
// (an external proxy, or any entry of an older snapshot) gets a CONNECT pinned to the checked address.
// The SSRF guard still resolves and refuses at the gateway first, and an upstream that refuses our
// credentials is a 502 upstream_auth_failed, never its 407 passed to the client.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
/** A second target on another loopback address, routed to the unmarked upstream. */
const PINNED_HOST = '127.0.0.3';

describe('plain HTTP per upstream: absolute form where the snapshot says the upstream filters', () => {
  let targets: Targets;
  let pinnedTarget: http.Server;
  let pinnedPort: number;
  let upstream: ForwardProxy;
  let gw: GatewayProcess;
  const get = (authority: string, path = '/page?x=1') =>
    rawExchange(
      gw.proxyPort,
      `GET http://${authority}${path} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${AUTH}\r\nX-Keep: yes\r\n\r\n`,
    );

  beforeAll(async () => {
    targets = await startTargets();
    pinnedTarget = http.createServer((req, res) => res.end(JSON.stringify({ url: req.url, via: 'pinned' })));
    await new Promise<void>((r) => pinnedTarget.listen(0, PINNED_HOST, r));
    pinnedPort = (pinnedTarget.address() as AddressInfo).port;
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await upstream.listen();
    const good = `http://up:up-pass@127.0.0.1:${port}`;
    const snapshot = snapshotFile({
      upstreams: [good, `http://up:wrong@127.0.0.1:${port}`, good],
      routing: [
        { name: 'bad', match: { hosts: ['127.0.0.2'] }, selector: { pool: 'bad' }, policy: 'round-robin' },
        { name: 'ext', match: { hosts: [PINNED_HOST] }, selector: { pool: 'ext' }, policy: 'round-robin' },
        { name: 'default', match: { hosts: ['*'] }, selector: { pool: 'good' }, policy: 'least-active' },
      ],
      attributes: (i) => ({ pool: ['good', 'bad', 'ext'][i]! }),
      // The same proxy process behind all three: only the snapshot's mark differs.
      filtersDestinations: (i) => i !== 2,
    });
    gw = await startGateway(snapshot, {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort},127.0.0.2:9,${PINNED_HOST}:${pinnedPort}`,
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await targets?.close();
    await new Promise((r) => pinnedTarget?.close(r));
  });

  it('a filtering upstream forwards (no tunnel), the target sees its own request and no credentials', async () => {
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

  it('an upstream without the mark gets a CONNECT pinned to the checked address', async () => {
    const before = upstream.stats();
    const r = await get(`${PINNED_HOST}:${pinnedPort}`, '/p');
    expect(r.text).toMatch(/^HTTP\/1\.1 200/);
    expect(bodyOf(r.text)).toEqual({ url: '/p', via: 'pinned' });
    const after = upstream.stats();
    expect(after.tunnels).toBe(before.tunnels + 1);
    expect(after.forwarded).toBe(before.forwarded);
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
