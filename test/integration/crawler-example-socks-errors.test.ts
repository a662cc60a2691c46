// docs/examples/crawler.ts through a SOCKS5 proxy that refuses: the error the crawler prints (its main
// console.error()s whatever is thrown) names what failed and never the proxy's password. The `socks`
// package's errors carry the whole connect options — password included — as an own field, which
// console.error and loggers print.
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

it('keeps the password out of a refused SOCKS5 connect’s error', async () => {
  const url = `socks5://crawl:wr0ng-s3cret@${socks.host}:${socks.port}`;
  const err = await fetchThroughProxy(url, 'http://127.0.0.1:9/', 10_000).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Error);
  expect(socks.stats().authFailures).toBe(1);
  expect(inspect(err)).not.toContain('wr0ng-s3cret');
  expect(String(err)).toMatch(/authentication/i);
});
