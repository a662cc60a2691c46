// The probe's checks resolve a proxy's endpoint name through the prober's resolver (proxyProber:
// c-ares, shared/src/adapters/dns-resolve.ts), not dns.lookup, against real forward proxies (HTTP and
// SOCKS5, emulators/forward-proxy) and a nameserver on loopback (test/support/dns-server.ts) that answers
// `localhost` and never answers `*.hang.test` — one provider's nameserver gone silent. dns.lookup ran
// getaddrinfo on libuv's four pool threads: four look-ups stuck on that silent zone held all of them, and
// every other proxy entered by name failed its DIAL with `timeout` until the system resolver gave up. Here
// the pool's threads are held for the length of a test by opens of FIFOs nobody writes to — pool jobs that
// do not finish, as those getaddrinfo calls did not — and a proxy named `localhost` must still pass every
// check while the stuck names' checks end at their own deadline as DIAL `timeout` (docs/health.md § How a
// check dials).
import { execFileSync } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { dnsResolve } from '../../shared/src/adapters/dns-resolve.js';
import {
  type ProbeResult,
  type ProbeTarget,
  proxyProber,
} from '../../shared/src/adapters/probe/proxy-probe.js';
import { type DnsServer, startDnsServer } from '../support/dns-server.js';

let targets: Targets;
let dns: DnsServer;
let httpProxy: ForwardProxy;
let socksProxy: ForwardProxy;

beforeAll(async () => {
  targets = await startTargets();
  dns = await startDnsServer({
    a: { localhost: ['127.0.0.1'] },
    silent: (name) => name.endsWith('.hang.test'),
  });
  httpProxy = createForwardProxy({ credentials: 'u:p' });
  socksProxy = createForwardProxy({ protocol: 'socks5', credentials: 'u:p' });
  await httpProxy.listen();
  await socksProxy.listen();
});

afterAll(async () => {
  await httpProxy?.close();
  await socksProxy?.close();
  await dns?.close();
  await targets?.close();
});

/** The deployed prober's shape, against the loopback nameserver; its attempts outlast every check here. */
const prober = () => proxyProber(dnsResolve({ servers: [dns.address], timeoutMs: 3_000, tries: 2 }));

const httpUrl = () => `http://127.0.0.1:${targets.httpPort}/`;
// By address: the proxy dials the site itself, and a name there would be the proxy's own look-up.
const httpsUrl = () => `https://127.0.0.1:${targets.httpsPort}/`;

/** Every kind of check the probe makes through a proxy at `host`: both protocols, each tier's request. */
function checks(host: string, timeoutMs: number): Array<[string, () => Promise<ProbeResult>]> {
  const p = prober();
  const http: ProbeTarget = { host, port: httpProxy.port, credentials: 'u:p' };
  const socks: ProbeTarget = { host, port: socksProxy.port, credentials: 'u:p', protocol: 'socks5' };
  const opts = (url: string) => ({ url, timeoutMs, expectedStatus: 200, rejectUnauthorized: false });
  const authority = `127.0.0.1:${targets.httpsPort}`;
  return [
    ['http proxy, absolute-URI GET', () => p.probe(http, opts(httpUrl()))],
    ['http proxy, CONNECT + TLS', () => p.probe(http, opts(httpsUrl()))],
    ['http proxy, CONNECT handshake', () => p.handshake(http, authority, timeoutMs)],
    ['socks5 proxy, GET', () => p.probe(socks, opts(httpUrl()))],
    ['socks5 proxy, TLS', () => p.probe(socks, opts(httpsUrl()))],
    ['socks5 proxy, CONNECT handshake', () => p.handshake(socks, authority, timeoutMs)],
  ];
}

/** Runs each check; its name, how it ended, and how long it took. */
async function run(list: Array<[string, () => Promise<ProbeResult>]>) {
  return Promise.all(
    list.map(async ([name, check]) => {
      const t0 = performance.now();
      const r = await check();
      return { name, r, ms: performance.now() - t0 };
    }),
  );
}

/**
 * Every thread of libuv's pool held until release(): each one blocked opening a FIFO for reading, which
 * returns only once a writer opens it — a pool job that does not finish, as a getaddrinfo stuck on a
 * silent nameserver does not.
 */
async function holdThreadPool() {
  const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const dir = mkdtempSync(join(tmpdir(), 'probe-dns-pool-'));
  const fifos = Array.from({ length: threads }, (_, i) => join(dir, `f${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const opens = fifos.map((f) => open(f, 'r'));
  // Held: a getaddrinfo of localhost (/etc/hosts, answered at once otherwise) does not complete meanwhile.
  const probe = lookup('localhost').then(() => 'done');
  const release = async () => {
    for (const f of fifos) {
      // A non-blocking open for writing succeeds once the reader's open is in flight (ENXIO before).
      for (let i = 0; ; i++) {
        try {
          closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENXIO' || i > 100) throw e;
          await sleep(10);
        }
      }
    }
    for (const h of await Promise.all(opens)) await h.close();
    await probe;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    expect(await Promise.race([probe, sleep(300).then(() => 'held')])).toBe('held');
  } catch (err) {
    // The pool's threads are the test worker's, shared with the files it runs next (isolate: false).
    await release();
    throw err;
  }
  return release;
}

describe('probe checks: a proxy entered by DNS name', () => {
  it("a name whose nameserver never answers: the check ends at its deadline, DIAL timeout, the proxy's own address unknown", async () => {
    const results = await run(checks('p1.hang.test', 800));
    for (const { name, r, ms } of results) {
      expect({ name, ok: r.ok, failure: r.failure, proxyAddress: r.proxyAddress ?? null }).toEqual({
        name,
        ok: false,
        failure: { stage: 'DIAL', code: 'timeout' },
        proxyAddress: null,
      });
      // At the check's 800 ms deadline, not at the resolver's ~9 s: 2.5 s leaves a loaded runner room.
      expect(ms).toBeLessThan(2_500);
    }
    // Asked of the loopback nameserver (c-ares), not of the system resolver.
    expect(dns.queries).toContain('A p1.hang.test');
  });

  it('with look-ups stuck on a silent zone and every thread of the pool held, a proxy named localhost still passes every check', async () => {
    const release = await holdThreadPool();
    try {
      // Stuck look-ups of the silent provider's names, more than the pool has threads, under way meanwhile.
      const stuck = run(Array.from({ length: 8 }, (_, i) => checks(`s${i}.hang.test`, 3_000)[0]!));
      const results = await run(checks('localhost', 2_000));
      for (const { name, r, ms } of results) {
        expect({ name, ok: r.ok, failure: r.failure }).toEqual({ name, ok: true, failure: null });
        expect(ms).toBeLessThan(2_000);
        // The socket's peer, what EGRESS compares the exit address with: the address the name resolved to
        // (a handshake reports none).
        if (!name.endsWith('handshake')) expect(r.proxyAddress).toBe('127.0.0.1');
      }
      // What the checks sent is about the site, not the proxy: the site saw its own authority as Host.
      const get = results.find((x) => x.name === 'http proxy, absolute-URI GET')!.r;
      expect(JSON.parse(get.body!).host).toBe(`127.0.0.1:${targets.httpPort}`);
      const tls = results.find((x) => x.name === 'http proxy, CONNECT + TLS')!.r;
      expect(JSON.parse(tls.body!).host).toBe(`127.0.0.1:${targets.httpsPort}`);
      expect(dns.queries).toContain('A localhost');
      for (const { r } of await stuck) expect(r.failure).toEqual({ stage: 'DIAL', code: 'timeout' });
    } finally {
      await release();
    }
  });
});
