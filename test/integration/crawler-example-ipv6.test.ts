// docs/examples/crawler.ts through a proxy on an IPv6 address: an external endpoint may be one, and the
// lease URL brackets it (`http://user:pw@[::1]:3128`). WHATWG URL keeps the brackets in `hostname`,
// which a socket connect cannot resolve (getaddrinfo ENOTFOUND [::1]): the crawler must strip them, for
// absolute-URI requests and for CONNECT tunnels alike, as it does for SOCKS5.
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchThroughProxy } from '../../docs/examples/crawler.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { proxyUrl } from '../../shared/src/domain/leases/endpoint.js';

/** Whether this machine has IPv6 loopback (a container may have none): what every test here needs. */
const ipv6 = await new Promise<boolean>((resolve) => {
  const probe = createTcpServer();
  probe.once('error', () => resolve(false));
  probe.listen(0, '::1', () => probe.close(() => resolve(true)));
});

describe.skipIf(!ipv6)(`a proxy on ::1${ipv6 ? '' : ' (skipped: no IPv6 loopback on this machine)'}`, () => {
  let forward: ForwardProxy;
  let page: Server;
  let pageUrl: string;
  let leased: string;

  beforeAll(async () => {
    forward = createForwardProxy({ host: '::1', credentials: 'crawl:pw' });
    await forward.listen();
    page = createServer((_req, res) => res.end('through an IPv6 proxy'));
    await new Promise<void>((ok) => page.listen(0, '127.0.0.1', ok));
    pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}/`;
    // The URL the lease service hands out for this endpoint.
    leased = proxyUrl(
      { host: '::1', port: forward.port, protocol: 'http' },
      { username: 'crawl', password: 'pw' },
    );
  });

  afterAll(async () => {
    await forward?.close();
    await new Promise((r) => page?.close(r));
  });

  it('fetches an http:// page through it (absolute-URI request)', async () => {
    expect(leased).toMatch(/@\[::1\]:/);
    expect(await fetchThroughProxy(leased, pageUrl, 10_000)).toEqual({
      status: 200,
      body: 'through an IPv6 proxy',
    });
  });

  it('opens a CONNECT tunnel through it for an https:// page', async () => {
    const before = forward.stats().tunnels;
    // The page speaks no TLS: the tunnel opens, then the handshake inside it fails, not the connect.
    const err = await fetchThroughProxy(leased, pageUrl.replace('http:', 'https:'), 10_000).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as NodeJS.ErrnoException).code).not.toBe('ENOTFOUND');
    expect(forward.stats().tunnels - before).toBe(1);
  });
});
