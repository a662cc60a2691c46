// docs/examples/crawler.ts through a SOCKS5 proxy that refuses: the error the crawler prints (its main
// console.error()s whatever is thrown) names what failed and never the proxy's password. The `socks`
// package's errors carry the whole connect options — password included — as an own field, which
// console.error and loggers print.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fetchThroughProxy } from '../../docs/examples/crawler.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

let socks: ForwardProxy;
/** An HTTP proxy that opens tunnels to port 443 only, as a managed proxy's squid by default. */
let http443: ForwardProxy;

beforeAll(async () => {
  socks = createForwardProxy({ protocol: 'socks5', credentials: 'crawl:right-pw' });
  await socks.listen();
  http443 = createForwardProxy({ credentials: 'crawl:right-pw', connectPorts: [443] });
  await http443.listen();
});

afterAll(async () => {
  await socks?.close();
  await http443?.close();
});

// Returned as a page, the proxy's 403 read as the site's and was reported `banned`: the proxy cooled
// down for the whole host, on the ports it serves too.
it('throws on a tunnel the HTTP proxy refuses: its answer is no page of the site', async () => {
  const url = `http://crawl:right-pw@${http443.host}:${http443.port}`;
  const err = await fetchThroughProxy(url, 'https://127.0.0.1:8443/', 10_000).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Error);
  expect(String(err)).toMatch(/proxy refused the tunnel to 127\.0\.0\.1:8443: HTTP 403/);
});

it('throws on an HTTP proxy’s own error page (X-Squid-Error) for a plain-http target: no page of the site', async () => {
  const squid = http.createServer((_req, res) => {
    res.writeHead(403, { 'x-squid-error': 'ERR_ACCESS_DENIED 0', 'content-type': 'text/html' });
    res.end('<html>Access Denied</html>');
  });
  await new Promise<void>((r) => squid.listen(0, '127.0.0.1', r));
  try {
    const url = `http://crawl:right-pw@127.0.0.1:${(squid.address() as AddressInfo).port}`;
    const err = await fetchThroughProxy(url, 'http://127.0.0.1:81/', 10_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err)).toMatch(
      /proxy refused the request to 127\.0\.0\.1:81: HTTP 403 \(ERR_ACCESS_DENIED 0\)/,
    );
  } finally {
    await new Promise((r) => squid.close(r));
  }
});

it('keeps the password out of a refused SOCKS5 connect’s error', async () => {
  const url = `socks5://crawl:wr0ng-s3cret@${socks.host}:${socks.port}`;
  const err = await fetchThroughProxy(url, 'http://127.0.0.1:9/', 10_000).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Error);
  expect(socks.stats().authFailures).toBe(1);
  expect(inspect(err)).not.toContain('wr0ng-s3cret');
  expect(String(err)).toMatch(/authentication/i);
});
