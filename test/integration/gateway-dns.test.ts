// The gateway resolves target names over DNS itself (GATEWAY_DNS_SERVERS, c-ares; dns-resolve.ts), with
// a real nameserver on loopback: a name is checked by what DNS answers for it, a silent nameserver is a
// bounded 502 target_unresolvable, and look-ups stuck on a silent zone do not hold up the others.
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import { type DnsServer, startDnsServer } from '../support/dns-server.js';
import { pollUntil } from '../support/poll.js';

let targets: Targets;
let upstream: ForwardProxy;
let dns: DnsServer;
let gw: Awaited<ReturnType<typeof startGateway>>;

beforeAll(async () => {
  targets = await startTargets();
  upstream = createForwardProxy({ credentials: 'up:up-pass' });
  const { port } = await upstream.listen();
  const file = join(mkdtempSync(join(tmpdir(), 'gw-dns-')), 'snapshot.json');
  writeFileSync(file, JSON.stringify(snapshotFile({ upstreams: [`http://up:up-pass@127.0.0.1:${port}`] })));
  dns = await startDnsServer({
    // site.test and site2.test are the allow-listed loopback site; private.test is a private address.
    a: { 'site.test': ['127.0.0.1'], 'site2.test': ['127.0.0.1'], 'private.test': ['10.9.8.7'] },
    silent: (name) => name.endsWith('.hang.test'),
  });
  const cfg = loadGatewayConfig(['--snapshot', file], {
    PORT: '0',
    GATEWAY_PROXY_PORT: '0',
    HOST: '127.0.0.1',
    GATEWAY_CLIENT_AUTH: 'none',
    GATEWAY_SSRF_ALLOW: `site.test:${targets.httpPort},site2.test:${targets.httpPort}`,
    GATEWAY_DNS_SERVERS: dns.address,
    GATEWAY_DNS_TIMEOUT_MS: '1500',
    LOG_LEVEL: 'error',
  });
  gw = await startGateway(cfg, { log: jsonLogger('error', () => {}), version: 't' });
});

afterAll(async () => {
  await gw?.shutdown();
  await dns?.close();
  await upstream?.close();
  await targets?.close();
});

/** A plain-HTTP GET of http://HOST:port/ through the gateway; everything the client got, once it closed. */
function get(host: string): Promise<string> {
  return new Promise((resolve) => {
    const c = net.connect(gw.proxyPort!, '127.0.0.1');
    let got = '';
    c.on('data', (d) => {
      got += d;
    });
    c.on('error', () => {});
    c.on('close', () => resolve(got));
    c.once('connect', () =>
      c.write(
        `GET http://${host}:${targets.httpPort}/ HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      ),
    );
  });
}

describe('target names resolved over GATEWAY_DNS_SERVERS', () => {
  it('serves a name by the address its nameserver gives, and refuses one that answers a private address', async () => {
    expect(await get('site.test')).toMatch(/^HTTP\/1\.1 200 /);
    const refused = await get('private.test');
    expect(refused).toMatch(/^HTTP\/1\.1 403 /);
    expect(refused).toContain('ssrf_refused');
    expect(dns.queries).toEqual(expect.arrayContaining(['A site.test', 'A private.test']));
  });

  it('a name whose nameserver never answers is a bounded 502 target_unresolvable', async () => {
    const text = await get('one.hang.test');
    expect(text).toMatch(/^HTTP\/1\.1 502 /);
    expect(text).toContain('target_unresolvable');
  });

  it('look-ups stuck on a silent zone do not hold up another name', async () => {
    // More stuck look-ups than libuv's thread pool has threads: getaddrinfo would queue the next behind them.
    const stuck = Array.from({ length: 8 }, (_, i) => get(`s${i}.hang.test`));
    let stuckDone = 0;
    for (const s of stuck) s.then(() => stuckDone++);
    await pollUntil(
      async () => gw.worker.checking,
      (n) => n === 8,
      5_000,
      'eight requests waiting for their look-ups',
    );
    expect(await get('site2.test')).toMatch(/^HTTP\/1\.1 200 /);
    expect(stuckDone).toBe(0);
    for (const text of await Promise.all(stuck)) expect(text).toContain('target_unresolvable');
  });
});
