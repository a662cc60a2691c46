// /v1/fetch's deadline is counted on the monotonic clock (fetch-through.ts): a wall clock stepped while
// a fetch is under way (NTP, a VM resumed) neither ends it at once nor lets it run on past its timeoutMs.
// The step lands during the guard's look-up, before the tunnel is dialled: the bound handed to the dial
// and to the response-head timer is what was left of the fetch's own. Real loopback sockets: an http
// upstream that answers CONNECT and then, as the target, the request — or never, for the late case.
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { type FetchDeps, fetchThrough } from './fetch-through.js';
import { jsonLogger } from './logger.js';
import { newSocketCounts } from './sockets.js';
import { TargetGuard } from './target-guard.js';
import { UpstreamPool } from './upstream-pool.js';
import { GatewayWorker } from './worker.js';

const iso = (ms: number) => new Date(ms).toISOString();
const realNow = Date.now.bind(Date);

/** Whether the target (behind the upstream's CONNECT) answers the request it is sent. */
let answers = true;
const open = new Set<net.Socket>();
let upstream: net.Server;
let port: number;

beforeAll(async () => {
  upstream = net.createServer((s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => {});
    let connected = false;
    s.on('data', () => {
      if (!connected) {
        connected = true;
        s.write('HTTP/1.1 200 Connection established\r\n\r\n');
      } else if (answers) s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as AddressInfo).port;
});

afterEach(() => {
  vi.restoreAllMocks();
  for (const s of open) s.destroy();
});

afterAll(async () => {
  await new Promise((r) => upstream.close(r));
});

async function deps(stepMs: number): Promise<FetchDeps> {
  const creds = new StaticCredentialResolver();
  creds.replace({ up: { username: 'u', password: 'p' } });
  const worker = new GatewayWorker({
    credentials: new CredentialCache(creds, 60_000, () => Date.now()),
    log: jsonLogger('error', () => {}),
    // The wall clock is the one the test steps (Date.now); the monotonic one runs on, as in production.
    now: () => Date.now(),
    monotonicNow: () => performance.now(),
    maxStaleAgeMs: Number.POSITIVE_INFINITY,
    workerId: 'w1',
    stickyTableSize: 10,
    outcomeQueueSize: 10,
  });
  const t = realNow();
  const applied = await worker.applySnapshot(
    buildSnapshot(
      {
        schemaVersion: 1,
        version: 1,
        ownershipEpoch: 1,
        workerId: 'w1',
        generatedAt: iso(t),
        validUntil: iso(t + 3_600_000),
        routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }],
        proxies: [
          {
            name: 'p1',
            host: '127.0.0.1',
            port,
            protocol: 'http',
            capacity: 5,
            expiresAt: iso(t + 3_600_000),
            usableUntil: iso(t + 3_000_000),
            attributes: {},
            credentialsRef: { secret: 'up', version: 'latest' },
          },
        ],
      },
      sha256Hex,
    ),
  );
  expect(applied).toMatchObject({ ok: true });
  const sockets = newSocketCounts();
  return {
    worker,
    guard: new TargetGuard(
      parseAllowList([]).allow,
      async () => {
        // The wall clock steps while the name is looked up.
        vi.spyOn(Date, 'now').mockImplementation(() => realNow() + stepMs);
        return ['8.8.8.8'];
      },
      { ttlMs: 0, maxEntries: 10, now: () => Date.now() },
    ),
    recorder: { request() {}, ssrfRefused() {}, redialed() {}, outcomeDropped() {} },
    sockets,
    upstreamTimeoutMs: 2_000,
    maxTimeoutMs: 30_000,
    pool: new UpstreamPool(sockets, { idleMs: 0, maxIdlePerUpstream: 0 }),
  };
}

const request = (timeoutMs: number) =>
  ({ url: 'http://site.example/x', method: 'GET', headers: {}, bodyEncoding: 'utf8', timeoutMs }) as const;

async function bodyOf(result: Awaited<ReturnType<typeof fetchThrough>>): Promise<string> {
  if (!result.ok) throw new Error(`fetch failed: ${result.status} ${result.code}`);
  const chunks: Buffer[] = [];
  for await (const c of result.response) chunks.push(c as Buffer);
  result.done(false);
  return Buffer.concat(chunks).toString();
}

describe('/v1/fetch deadline and a wall clock that steps', () => {
  it('a step forward past the whole timeoutMs does not end the fetch: the target answers', async () => {
    answers = true;
    const result = await fetchThrough(request(5_000), 'crawler', await deps(60_000));
    expect(result).toMatchObject({ ok: true });
    expect(await bodyOf(result)).toBe('hello');
  });

  it('a step back does not stretch it: a silent target is given up at the timeoutMs, not a minute later', async () => {
    answers = false;
    const t0 = performance.now();
    const result = await fetchThrough(request(400), 'crawler', await deps(-60_000));
    expect(result).toMatchObject({ ok: false, status: 504, code: 'fetch_timeout' });
    // Bounded well under the step: without the monotonic deadline the head timer ran 60.4 s.
    expect(performance.now() - t0).toBeLessThan(5_000);
  }, 10_000);
});
