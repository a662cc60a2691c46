// docs/examples/crawler.ts when the fetch fails and the release fails too (the proxy refuses, and the API
// is down by the time the crawler gives the lease back): the crawler prints the fetch's error — what went
// wrong with the crawl — not the release's, which the lease's TTL makes good anyway. A fake API stands in
// for the service: what is under test is the example's handling of two failures, not the service.
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';

const run = promisify(execFile);

let api: Server;
let apiUrl: string;
let refusingPort: number;
const seen: string[] = [];

beforeAll(async () => {
  // Nothing listens there: a connect to the proxy is refused.
  refusingPort = await freePort();
  api = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url === '/v1/leases') {
      res.statusCode = 201;
      res.end(
        JSON.stringify({
          leaseId: 'L1234567890123456789012',
          proxy: {
            name: 'p1',
            url: `http://127.0.0.1:${refusingPort}`,
            host: '127.0.0.1',
            port: refusingPort,
            protocol: 'http',
            attributes: {},
            latencyMillis: null,
          },
          expiresAt: new Date(Date.now() + 60_000).toISOString(),
          ttlSeconds: 60,
          target: '127.0.0.1:9',
          exclusive: false,
        }),
      );
      return;
    }
    // The release (and anything else): the API failing.
    res.statusCode = 500;
    res.end(JSON.stringify({ error: 'internal', message: 'release failed: the API is down' }));
  });
  await new Promise<void>((ok) => api.listen(0, '127.0.0.1', ok));
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => api?.close(r));
});

it("prints the fetch's error, not the release's, when both fail (and still tries the release)", async () => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PROXYPLANE_')));
  const out = await run(
    process.execPath,
    ['--import', 'tsx', 'docs/examples/crawler.ts', 'http://127.0.0.1:9/'],
    {
      env: { ...env, PROXYPLANE_URL: apiUrl, PROXYPLANE_TOKEN: 'crawler-token' },
      timeout: 60_000,
    },
  ).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
  expect(out.code).toBe(1);
  // The client sends a release again after a 5xx (release is idempotent): one or more, nothing else.
  expect(seen[0]).toBe('POST /v1/leases');
  expect(seen.length).toBeGreaterThan(1);
  expect(new Set(seen.slice(1))).toEqual(new Set(['DELETE /v1/leases/L1234567890123456789012']));
  expect(out.stderr).toContain(`ECONNREFUSED 127.0.0.1:${refusingPort}`);
  expect(out.stderr).not.toContain('release failed');
});
