// /v1/fetch callers by bearer token: each token is a caller of its own on a sticky route. They were all one
// anonymous caller (""), so one token's session value was every token's — a second caller sending the same
// x-session landed on the first one's proxy (its exit IP), and one token minting values evicted the others'
// keys. Two tokens, the same session value, a sticky route over two proxies on loopback that answer as the
// target too (each says its name), so which proxy served is in the body.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { type GatewayProxy, sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { ClientAuth } from './client-auth.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { jsonLogger } from './logger.js';
import { TargetGuard } from './target-guard.js';
import { testHttpListener } from './testing/http-listener.js';
import { GatewayWorker } from './worker.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** A proxy that takes CONNECT and then answers the request itself with its name; `/hold` waits for `release`. */
function proxyAndTarget(name: string) {
  const open = new Set<net.Socket>();
  let held: (() => void)[] = [];
  let onHeld = () => {};
  const server = net.createServer((s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => {});
    let buf = '';
    let connected = false;
    s.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.slice(0, end);
      buf = buf.slice(end + 4);
      if (!connected) {
        connected = true;
        s.write('HTTP/1.1 200 Connection established\r\n\r\n');
        return;
      }
      const answer = () => s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${name.length}\r\n\r\n${name}`);
      if (head.startsWith('GET /hold ')) {
        held.push(answer);
        onHeld();
      } else answer();
    });
  });
  return {
    server,
    name,
    /** Resolves once a `/hold` request is waiting here. */
    holding: () => new Promise<void>((r) => (onHeld = r)),
    release: () => {
      for (const a of held) a();
      held = [];
    },
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const proxies = [proxyAndTarget('proxy-a'), proxyAndTarget('proxy-b')];
let gateway: http.Server;
let base: string;

beforeAll(async () => {
  for (const p of proxies) await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
  const creds = new StaticCredentialResolver();
  creds.replace({ up: { username: 'u', password: 'p' } });
  const log = jsonLogger('error', () => {});
  const worker = new GatewayWorker({
    credentials: new CredentialCache(creds, 60_000, Date.now),
    log,
    now: Date.now,
    monotonicNow: () => performance.now(),
    maxStaleAgeMs: Number.POSITIVE_INFINITY,
    workerId: 'w1',
    stickyTableSize: 100,
    outcomeQueueSize: 10,
  });
  const entry = (p: (typeof proxies)[number]): GatewayProxy => ({
    name: p.name,
    host: '127.0.0.1',
    port: (p.server.address() as AddressInfo).port,
    protocol: 'http',
    capacity: 5,
    expiresAt: iso(Date.now() + 3_600_000),
    usableUntil: iso(Date.now() + 3_000_000),
    attributes: {},
    credentialsRef: { secret: 'up', version: 'latest' },
  });
  const snapshot = buildSnapshot(
    {
      schemaVersion: 1,
      version: 1,
      ownershipEpoch: 1,
      workerId: 'w1',
      generatedAt: iso(Date.now()),
      validUntil: iso(Date.now() + 600_000),
      routing: [
        {
          name: 'all',
          match: { hosts: ['*'] },
          selector: {},
          policy: 'sticky',
          stickyKey: { header: 'x-session' },
        },
      ],
      proxies: proxies.map(entry),
    },
    sha256Hex,
  );
  expect(await worker.applySnapshot(snapshot)).toMatchObject({ ok: true });
  gateway = http.createServer(
    testHttpListener(worker, {
      // Never dialled: only named in the CONNECT (the proxies answer as the target themselves).
      guard: new TargetGuard(parseAllowList([]).allow, async () => ['8.8.8.8'], {
        ttlMs: 60_000,
        maxEntries: 10,
        now: Date.now,
      }),
      auth: new ClientAuth([], ['token-of-a', 'token-of-b']),
      log,
      upstreamTimeoutMs: 2000,
      maxTimeoutMs: 5000,
      maxBodyBytes: 4096,
      maxResponseBytes: 4096,
    }),
  );
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const p of proxies) p.release();
  gateway.closeAllConnections();
  await new Promise((r) => gateway.close(r));
  for (const p of proxies) await p.close();
});

/** The proxy that served a fetch of `path` with session `s`, as `token`'s caller. */
async function servedBy(token: string, path: string, s = 'session-1'): Promise<string> {
  const res = await fetch(`${base}/v1/fetch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://site.example${path}`, headers: { 'x-session': s } }),
  });
  expect(res.status).toBe(200);
  return res.text();
}

it('gives two bearer callers sending the same session value a pin each, not one between them', async () => {
  // A's session is pinned where its fetch is still under way; B's pick for the same value, were it A's
  // key, would follow the pin there — its own key goes to the least active proxy, the other one.
  const holding = proxies.map((p) => p.holding());
  const first = servedBy('token-of-a', '/hold');
  await Promise.race(holding);
  const bWhileABusy = await servedBy('token-of-b', '/now');
  for (const p of proxies) p.release();
  const aFirst = await first;
  expect(bWhileABusy).not.toBe(aFirst);
  // Both pins kept apart with nothing in flight: each caller's session stays on its own proxy.
  expect(await servedBy('token-of-a', '/now')).toBe(aFirst);
  expect(await servedBy('token-of-b', '/now')).toBe(bWhileABusy);
  expect(await servedBy('token-of-a', '/now')).toBe(aFirst);
});
