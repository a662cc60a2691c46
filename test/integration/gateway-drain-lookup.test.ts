import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { StaticCredentialResolver } from '../../functions/gateway/src/credentials.js';
import { FileSnapshotSource } from '../../functions/gateway/src/file-source.js';
import { startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import { upstreamFixture } from '../support/gateway-upstream-fixture.js';
import { pollUntil } from '../support/poll.js';

const fixture = upstreamFixture();

// A request is seen waiting for its look-up within SEEN_MS, before a LOOKUP_MS look-up ends (the drain
// test then finds at least LOOKUP_MS - SEEN_MS of it left); the stale test sees the worker go stale within
// STALE_SEEN_MS, before its STALE_LOOKUP_MS look-up ends. In process, so every wait shares one event loop
// with the gateway: the windows are three times what they were (1.5 s / 1.4 s, 2.6 s / 2.4 s), the order
// and each margin's direction kept, so a loaded machine has more time to take each step before the
// look-up it races. The drain timeout outlasts the longest look-up, which the drain waits for.
const LOOKUP_MS = 4_500;
const SEEN_MS = 4_200;
const STALE_LOOKUP_MS = 7_800;
const STALE_SEEN_MS = 7_200;

const config = (env: Record<string, string> = {}) =>
  fixture.config({
    GATEWAY_SSRF_ALLOW: `slow.test:${fixture.targets.httpPort}`,
    GATEWAY_DRAIN_TIMEOUT_MS: '15000',
    ...env,
  });

/** A resolver that answers `slow.test` after `delayMs` (an uncached name). */
const slowResolve = (delayMs: number) => () =>
  new Promise<string[]>((r) => setTimeout(() => r(['127.0.0.1']), delayMs));

async function gatewayWithSlowLookups(delayMs: number, env: Record<string, string> = {}) {
  return startGateway(config(env), {
    log: jsonLogger('error', () => {}),
    version: 't',
    resolve: slowResolve(delayMs),
  });
}

/** Sends a plain-HTTP request for slow.test; resolves with everything the client received. */
function send(port: number): { sent: Promise<void>; answer: Promise<string> } {
  const c = net.connect(port, '127.0.0.1');
  let got = '';
  c.on('data', (d) => {
    got += d;
  });
  c.on('error', () => {});
  const sent = new Promise<void>((r) =>
    c.once('connect', () =>
      c.write(`GET http://slow.test:${fixture.targets.httpPort}/x HTTP/1.1\r\nHost: slow.test\r\n\r\n`, () =>
        r(),
      ),
    ),
  );
  const answer = new Promise<string>((r) => c.once('close', () => r(got)));
  return { sent, answer };
}

/** Sends the request and waits until it is admitted and waiting for its look-up. */
async function sendAndAwaitLookup(gw: { proxyPort: number | null; worker: { checking: number } }) {
  const req = send(gw.proxyPort!);
  await req.sent;
  await pollUntil(
    async () => gw.worker.checking,
    (n) => n === 1,
    SEEN_MS,
    'the request waiting for its look-up',
  );
  return req;
}

describe('requests waiting for the SSRF look-up', () => {
  it('are drained by a shutdown, not reset: the drain waits for the look-up and serves them', async () => {
    const gw = await gatewayWithSlowLookups(LOOKUP_MS);
    // The head is in and parsed (admitted), the look-up is pending.
    const req = await sendAndAwaitLookup(gw);
    const t0 = Date.now();
    await gw.shutdown();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    const text = await req.answer;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(gw.worker.checking).toBe(0);
  });

  it('never pick from a snapshot that went stale during the look-up: 503 snapshot_stale', async () => {
    const gw = await gatewayWithSlowLookups(2_600, { GATEWAY_MAX_STALE_AGE_SECONDS: '1' });
    try {
      const req = send(gw.proxyPort!);
      await req.sent;
      const text = await req.answer;
      expect(text).toMatch(/^HTTP\/1\.1 503 /);
      expect(text).toContain('snapshot_stale');
    } finally {
      await gw.shutdown();
    }
  });

  // A shutdown drains the requests admitted before it, but a snapshot gone stale meanwhile stays stale: the
  // shutdown's phase replaced "stale", and a look-up coming back then picked from the stale snapshot.
  it('never pick from a stale snapshot when a shutdown began after it went stale: 503 snapshot_stale', async () => {
    const gw = await gatewayWithSlowLookups(STALE_LOOKUP_MS, { GATEWAY_MAX_STALE_AGE_SECONDS: '1' });
    const req = await sendAndAwaitLookup(gw);
    await pollUntil(
      async () => gw.worker.phase(),
      (p) => p === 'stale',
      STALE_SEEN_MS,
      'the worker going stale',
    );
    await gw.shutdown();
    const text = await req.answer;
    expect(text).toMatch(/^HTTP\/1\.1 503 /);
    expect(text).toContain('snapshot_stale');
  });

  it('the draining report waits for them: a report with nothing in flight would hand the proxies over', async () => {
    const log = jsonLogger('error', () => {});
    const credentials = new StaticCredentialResolver();
    const inner = new FileSnapshotSource(fixture.file, credentials, log);
    // source.stop() is where a controller-mode worker sends its draining report.
    const checkingAtStop: number[] = [];
    let worker: { checking: number } | null = null;
    const source = {
      start: (sink: Parameters<typeof inner.start>[0]) => inner.start(sink),
      stop: async () => {
        checkingAtStop.push(worker!.checking);
        await inner.stop();
      },
    };
    const gw = await startGateway(config(), {
      log,
      version: 't',
      resolve: slowResolve(LOOKUP_MS),
      source,
      resolver: credentials,
    });
    worker = gw.worker;
    const req = await sendAndAwaitLookup(gw);
    await gw.shutdown();
    expect(checkingAtStop).toEqual([0]);
    expect(await req.answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});
