// docs/examples/crawler.ts on an https:// page, as docs/leases.md shows it for the local plane: the demo
// site's HTTPS port with its self-signed certificate, trusted through NODE_EXTRA_CA_CERTS, through an
// HTTP proxy (CONNECT, TLS inside the tunnel) and through a SOCKS5 proxy (SOCKS5 CONNECT, TLS inside).
// The target is named by its IP address, as the docs do: the crawler checks the certificate for that
// address and sends no SNI (RFC 6066 allows none for an address; Node warns when given one).
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSelfSignedCert } from '../../emulators/demo-target/certificate.js';
import { type DemoTarget, GREETING, startDemoTarget } from '../../emulators/demo-target/server.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { testProjectId } from '../support/emulators.js';
import { type ApiProcess, proxy, startApiProcess, writeFleet } from '../support/leases.js';

const run = promisify(execFile);
const projectId = testProjectId();
const db = new Firestore({ projectId });
const TOKEN = 'https-example-crawler-token';
let dir: string;
let certPath: string;
let site: DemoTarget;
let httpProxy: ForwardProxy;
let socksProxy: ForwardProxy;
let service: ApiProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pp-crawler-https-'));
  // For the address alone (the demo's also names localhost): the check must be for the host in the URL.
  const cert = await makeSelfSignedCert(dir, 1, 'IP:127.0.0.1', '127.0.0.1');
  certPath = cert.certPath;
  site = await startDemoTarget({
    host: '127.0.0.1',
    port: 0,
    tls: { port: 0, key: cert.key, cert: cert.cert },
  });
  httpProxy = createForwardProxy({ protocol: 'http' });
  socksProxy = createForwardProxy({ protocol: 'socks5' });
  await Promise.all([httpProxy.listen(), socksProxy.listen()]);
  const external = (p: ForwardProxy, kind: string) => {
    const base = proxy(kind, { external: true, attributes: { kind } });
    const endpoint = { host: p.host, port: p.port, protocol: p.protocol };
    return { ...base, spec: { ...base.spec, mode: 'external', endpoint } as typeof base.spec };
  };
  await writeFleet(db, [external(httpProxy, 'http'), external(socksProxy, 'socks')]);
  service = await startApiProcess({ GOOGLE_CLOUD_PROJECT: projectId, DISCOVERY_TOKENS: `example:${TOKEN}` });
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await httpProxy?.close();
  await socksProxy?.close();
  await site?.stop();
  await db.terminate();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const crawl = (selector: string, extraCa: string | undefined, url = `${site.tlsUrl}/`) =>
  run(process.execPath, ['--import', 'tsx', 'docs/examples/crawler.ts', url, selector], {
    env: {
      ...Object.fromEntries(
        Object.entries(process.env).filter(
          ([k]) => !k.startsWith('PROXYPLANE_') && k !== 'NODE_EXTRA_CA_CERTS',
        ),
      ),
      PROXYPLANE_API_URL: service.url,
      PROXYPLANE_CRAWLER_TOKEN: TOKEN,
      ...(extraCa ? { NODE_EXTRA_CA_CERTS: extraCa } : {}),
    },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );

describe('docs/examples/crawler.ts on the HTTPS demo site', () => {
  it.each([
    ['an HTTP proxy (CONNECT)', 'kind=http', 'leased http'],
    ['a SOCKS5 proxy', 'kind=socks', 'leased socks'],
  ])(
    'fetches through %s, trusting the certificate it was given, with no SNI warning',
    async (_, selector, leased) => {
      const out = await crawl(selector, certPath);
      expect(out.stderr).toContain(leased);
      expect(out.stderr).toContain('HTTP 200');
      expect(out.stderr).not.toMatch(/Warning/);
      expect(out).toMatchObject({ code: 0 });
      expect(out.stdout).toContain(GREETING);
      // The site's port is not 443: the Host header names it (RFC 9110 §7.2), as the URL does.
      expect(out.stdout).toContain(`<td>host</td><td>${new URL(site.tlsUrl!).host}</td>`);
    },
  );

  it('refuses the self-signed certificate without NODE_EXTRA_CA_CERTS, and still releases the lease', async () => {
    const out = await crawl('kind=http', undefined);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain('SELF_SIGNED');
    const active = await fetch(`${service.url}/v1/proxies?attr.kind=http`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    }).then((r) => r.json() as Promise<{ proxies: { activeLeases: number }[] }>);
    expect(active.proxies.map((p) => p.activeLeases)).toEqual([0]);
  });

  it('a site pushing back (the demo site’s /status/429): reported rate_limited, the next acquire for it finds the proxy cooling down', async () => {
    const pushback = `${site.url}/status/429`;
    const first = await crawl('kind=http', undefined, pushback);
    expect(first.stderr).toContain('HTTP 429');
    expect(first.stderr).toContain('reported rate_limited');
    expect(first.code).toBe(1);
    const again = await crawl('kind=http', undefined, `${site.url}/`);
    expect(again.stderr).toContain('"inCooldown":1');
    // When: the cooldown window (docs/leases.md), counted from the report a moment ago.
    expect(again.stderr).toMatch(/no proxy available \(one is again in \d+ s\):/);
    expect(again.code).toBe(2);
  });
});
