// docs/examples/crawler.ts through a SOCKS5 proxy that refuses: the error the crawler prints (its main
// console.error()s whatever is thrown) names what failed and never the proxy's password. The `socks`
// package's errors carry the whole connect options — password included — as an own field, which
// console.error and loggers print.
import { inspect } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fetchThroughProxy } from '../../docs/examples/crawler.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

let socks: ForwardProxy;

beforeAll(async () => {
  socks = createForwardProxy({ protocol: 'socks5', credentials: 'crawl:right-pw' });
  await socks.listen();
});

afterAll(async () => {
  await socks?.close();
});

it('keeps the password out of a refused SOCKS5 connect’s error', async () => {
  const url = `socks5://crawl:wr0ng-s3cret@${socks.host}:${socks.port}`;
  const err = await fetchThroughProxy(url, 'http://127.0.0.1:9/', 10_000).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Error);
  expect(socks.stats().authFailures).toBe(1);
  expect(inspect(err)).not.toContain('wr0ng-s3cret');
  expect(String(err)).toMatch(/authentication/i);
});
