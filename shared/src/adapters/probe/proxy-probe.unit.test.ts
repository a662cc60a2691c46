// The failure codes the probe logs (`probe.result` {code}; the TARGET runbook in docs/operations.md reads
// them): a probe that runs out of its deadline says `timeout` at whichever stage it was, not the error
// the abort happened to surface as (Node's AbortError `abort_err`, or `econnreset` for a cut body).
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchDirect, handshakeThroughProxy, probeThroughProxy } from './proxy-probe.js';

const sockets = new Set<Socket>();
const track = (s: Socket) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
  // A probe that cancels with bytes unread resets the connection: an ECONNRESET here is no failure, and
  // unheard, it would be an uncaught exception, failing the run.
  s.on('error', () => {});
};
// Accepts and never answers; reads (so it sees the client's FIN, and its socket closes with the client's).
const silent = createServer((s) => {
  track(s);
  s.resume();
});
/** Heads (and first bytes) each server below has written: a body's stage has begun once they are read. */
const answered = { silent: 0, stalling: 0, unframed: 0 };
// Answers any request's head, then never finishes the body.
const stalling = createHttpServer((_req, res) => {
  res.writeHead(200, { 'content-length': '100' });
  res.write('x');
  answered.stalling++;
});
stalling.on('connection', track);
// A body framed by the connection's close (no length, not chunked), whose first bytes arrive and the rest
// never: cut by the deadline, it must not read as a whole body (a hung data path passing its check).
const unframed = createServer((s) => {
  track(s);
  s.once('data', () => {
    s.write('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\npartial');
    answered.unframed++;
  });
});
// Listened on and closed again: nothing listens on its port.
const closed = createServer();

const portOf = (s: Server) => (s.address() as { port: number }).port;
const listen = (s: Server) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
const ports = { silent: 0, stalling: 0, unframed: 0, closed: 0 };

beforeAll(async () => {
  await Promise.all([listen(silent), listen(stalling), listen(unframed), listen(closed)]);
  ports.silent = portOf(silent);
  ports.stalling = portOf(stalling);
  ports.unframed = portOf(unframed);
  ports.closed = portOf(closed);
  await new Promise((r) => closed.close(r));
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all([silent, stalling, unframed].map((s) => new Promise((r) => s.close(r))));
});

const TIMEOUT_MS = 200;
/**
 * A check whose head must come in before it runs out (a timeout at BODY): a loaded worker's stall of
 * 200 ms before the head was read made it a RESPONSE_HEADERS timeout.
 */
const BODY_TIMEOUT_MS = 1_000;

describe('probe failure codes', () => {
  it.each([
    ['a proxy that never answers an absolute-form GET', 'silent', 'http://example.com/', 'RESPONSE_HEADERS'],
    ['a proxy that never answers a CONNECT', 'silent', 'https://example.com/', 'PROXY_HANDSHAKE'],
    ['a body that stops arriving', 'stalling', 'http://example.com/', 'BODY'],
    ['a body ended by the close that stops arriving', 'unframed', 'http://example.com/', 'BODY'],
  ] as const)('%s runs out of time: timeout', async (_label, proxy, url, stage) => {
    const timeoutMs = stage === 'BODY' ? BODY_TIMEOUT_MS : TIMEOUT_MS;
    const r = await probeThroughProxy(
      { host: '127.0.0.1', port: ports[proxy] },
      { url, timeoutMs, expectedStatus: 200 },
    );
    expect(r).toMatchObject({ ok: false, failure: { stage, code: 'timeout' } });
    expect(r.latencyMs).toBeGreaterThanOrEqual(timeoutMs - 20);
  });

  it('a CONNECT handshake (BASIC without a URL) that never completes: timeout', async () => {
    const r = await handshakeThroughProxy(
      { host: '127.0.0.1', port: ports.silent },
      'example.com:443',
      TIMEOUT_MS,
    );
    expect(r).toMatchObject({ ok: false, failure: { stage: 'PROXY_HANDSHAKE', code: 'timeout' } });
  });

  it('a refused connection is not a timeout: it keeps its own code', async () => {
    const r = await probeThroughProxy(
      { host: '127.0.0.1', port: ports.closed },
      { url: 'http://example.com/', timeoutMs: 5_000, expectedStatus: 200 },
    );
    expect(r).toMatchObject({ ok: false, failure: { stage: 'DIAL', code: 'econnrefused' } });
    const h = await handshakeThroughProxy(
      { host: '127.0.0.1', port: ports.closed },
      'example.com:443',
      5_000,
    );
    expect(h).toMatchObject({ ok: false, failure: { stage: 'DIAL', code: 'econnrefused' } });
  });
});

// Every deployed check carries the pass's cancel signal beside its timeout. A full garbage collection
// during the check collected the timeout (AbortSignal.any holds its sources weakly: nodejs/node#57736),
// and a proxy that never answers held its check until the pass's budget cancelled it, no failure recorded.
describe('a check with a live cancel signal, through a full garbage collection', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;

  it.each([
    [
      'an absolute-form GET',
      (cancel: AbortSignal) =>
        probeThroughProxy(
          { host: '127.0.0.1', port: ports.silent },
          { url: 'http://example.com/', timeoutMs: TIMEOUT_MS, expectedStatus: 200, cancel },
        ),
    ],
    [
      'a CONNECT',
      (cancel: AbortSignal) =>
        probeThroughProxy(
          { host: '127.0.0.1', port: ports.silent },
          { url: 'https://example.com/', timeoutMs: TIMEOUT_MS, expectedStatus: 200, cancel },
        ),
    ],
    [
      'a handshake',
      (cancel: AbortSignal) =>
        handshakeThroughProxy(
          { host: '127.0.0.1', port: ports.silent },
          'example.com:443',
          TIMEOUT_MS,
          cancel,
        ),
    ],
  ] as const)('%s still times out at its own timeout', async (_label, check) => {
    const before = sockets.size;
    const cancel = new AbortController();
    const gcd = setTimeout(gc, 50);
    // The pass's budget, far past the timeout: cancelled means the timeout was lost.
    const budget = setTimeout(() => cancel.abort(), 5_000);
    try {
      const r = await check(cancel.signal);
      expect(r.failure?.code).toBe('timeout');
    } finally {
      clearTimeout(gcd);
      clearTimeout(budget);
    }
    // Its socket closed at the server too, before the next test counts them.
    for (let i = 0; i < 100 && sockets.size > before; i++) await new Promise((r) => setTimeout(r, 10));
  });
});

// A probe pass that gave up waiting (its budget) cancels the checks it no longer waits for: each ends
// at once with its socket closed, not at its own timeout (up to 60 s) after the pass has returned.
describe('a cancelled check', () => {
  const LONG_MS = 30_000;
  const closedAtServer = async (before: number) => {
    for (let i = 0; i < 100 && sockets.size > before; i++) await new Promise((r) => setTimeout(r, 10));
    return sockets.size === before;
  };

  it.each([
    ['an absolute-form GET', 'silent', 'http://example.com/', 'RESPONSE_HEADERS'],
    ['a CONNECT', 'silent', 'https://example.com/', 'PROXY_HANDSHAKE'],
    ['a body', 'stalling', 'http://example.com/', 'BODY'],
    ['a body ended by the close', 'unframed', 'http://example.com/', 'BODY'],
  ] as const)(
    '%s in flight ends at once, cancelled, its socket closed',
    async (_label, proxy, url, stage) => {
      const before = sockets.size;
      const heads = answered[proxy];
      const cancel = new AbortController();
      const pending = probeThroughProxy(
        { host: '127.0.0.1', port: ports[proxy] },
        { url, timeoutMs: LONG_MS, expectedStatus: 200, cancel: cancel.signal },
      );
      for (let i = 0; i < 100 && sockets.size === before; i++) await new Promise((r) => setTimeout(r, 10));
      expect(sockets.size).toBe(before + 1); // connected, waiting
      if (stage === 'BODY') {
        // Past the head: written by the server (its own count), then read by the probe — a turn of the loop
        // later. (A fixed 50 ms after the connect lost to a stalled worker: cancelled at RESPONSE_HEADERS.)
        for (let i = 0; i < 500 && answered[proxy] === heads; i++)
          await new Promise((r) => setTimeout(r, 10));
        expect(answered[proxy]).toBe(heads + 1);
        await new Promise((r) => setImmediate(r));
      } else await new Promise((r) => setTimeout(r, 50)); // past the request's head
      cancel.abort();
      const r = await pending;
      expect(r).toMatchObject({ ok: false, failure: { stage, code: 'cancelled' } });
      expect(r.latencyMs).toBeLessThan(LONG_MS / 2);
      expect(await closedAtServer(before)).toBe(true);
    },
  );

  it('a CONNECT handshake (BASIC without a URL) in flight ends at once; one cancelled before starts nothing', async () => {
    const before = sockets.size;
    const cancel = new AbortController();
    const pending = handshakeThroughProxy(
      { host: '127.0.0.1', port: ports.silent },
      'example.com:443',
      LONG_MS,
      cancel.signal,
    );
    for (let i = 0; i < 100 && sockets.size === before; i++) await new Promise((r) => setTimeout(r, 10));
    cancel.abort();
    expect(await pending).toMatchObject({ ok: false, failure: { code: 'cancelled' } });
    expect(await closedAtServer(before)).toBe(true);
  });

  it('a check cancelled before it starts connects to nothing', async () => {
    let accepted = 0;
    const count = () => void accepted++;
    silent.on('connection', count);
    try {
      const cancel = new AbortController();
      cancel.abort();
      const proxy = { host: '127.0.0.1', port: ports.silent };
      const results = [
        await handshakeThroughProxy(proxy, 'example.com:443', LONG_MS, cancel.signal),
        ...(await Promise.all(
          ['http://example.com/', 'https://example.com/'].map((url) =>
            probeThroughProxy(proxy, { url, timeoutMs: LONG_MS, expectedStatus: 200, cancel: cancel.signal }),
          ),
        )),
        await fetchDirect({
          url: `http://127.0.0.1:${ports.silent}/`,
          timeoutMs: LONG_MS,
          expectedStatus: 200,
          cancel: cancel.signal,
        }),
      ];
      for (const r of results) expect(r).toMatchObject({ ok: false, failure: { code: 'cancelled' } });
      await new Promise((r) => setTimeout(r, 100)); // a dial would have been accepted by now
      expect(accepted).toBe(0);
    } finally {
      silent.off('connection', count);
    }
  });
});

describe('probe failure codes through a SOCKS5 proxy', () => {
  const socks = (port: number, credentials: string | null = null) => ({
    host: '127.0.0.1',
    port,
    credentials,
    protocol: 'socks5' as const,
  });

  it.each([['http://example.com/'], ['https://example.com/']])(
    'a proxy that never answers the greeting runs out of time (%s): timeout at PROXY_HANDSHAKE',
    async (url) => {
      const r = await probeThroughProxy(socks(ports.silent), {
        url,
        timeoutMs: TIMEOUT_MS,
        expectedStatus: 200,
      });
      expect(r).toMatchObject({ ok: false, failure: { stage: 'PROXY_HANDSHAKE', code: 'timeout' } });
      expect(r.latencyMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      const h = await handshakeThroughProxy(socks(ports.silent), 'example.com:443', TIMEOUT_MS);
      expect(h).toMatchObject({ ok: false, failure: { stage: 'PROXY_HANDSHAKE', code: 'timeout' } });
    },
  );

  it('a refused connection keeps its own code: DIAL econnrefused', async () => {
    const url = 'http://example.com/';
    const r = await probeThroughProxy(socks(ports.closed), { url, timeoutMs: 5_000, expectedStatus: 200 });
    expect(r).toMatchObject({ ok: false, failure: { stage: 'DIAL', code: 'econnrefused' } });
  });

  it('credentials RFC 1929 cannot carry (over 255 bytes) fail before any connection', async () => {
    const before = sockets.size;
    const r = await probeThroughProxy(socks(ports.silent, `u:${'p'.repeat(256)}`), {
      url: 'http://example.com/',
      timeoutMs: 5_000,
      expectedStatus: 200,
    });
    expect(r).toMatchObject({
      ok: false,
      failure: { stage: 'PROXY_HANDSHAKE', code: 'socks_credentials_too_long' },
    });
    expect(sockets.size).toBe(before);
  });
});

describe('fetchDirect: the echo endpoint as the prober itself sees it (no proxy)', () => {
  it('an answer is read whole, a status other than the expected one fails, silence runs out of time', async () => {
    const site = createHttpServer((req, res) => {
      if (req.url === '/down') res.writeHead(503).end('unavailable');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ip":"127.0.0.1","headers":{}}');
    });
    await listen(site);
    try {
      const base = `http://127.0.0.1:${portOf(site)}`;
      const up = await fetchDirect({ url: `${base}/v1/echo`, timeoutMs: 5_000, expectedStatus: 200 });
      expect(up).toMatchObject({
        ok: true,
        status: 200,
        body: '{"ip":"127.0.0.1","headers":{}}',
        failure: null,
      });
      const down = await fetchDirect({ url: `${base}/down`, timeoutMs: 5_000, expectedStatus: 200 });
      expect(down).toMatchObject({ ok: false, status: 503, failure: { code: 'unexpected_status_503' } });
      const silence = await fetchDirect({
        url: `http://127.0.0.1:${ports.silent}/v1/echo`,
        timeoutMs: TIMEOUT_MS,
        expectedStatus: 200,
      });
      expect(silence).toMatchObject({ ok: false, failure: { stage: 'DIAL', code: 'timeout' } });
    } finally {
      await new Promise((r) => site.close(r));
    }
  });

  it('reads at most maxBodyBytes of an answer, and a body that stops arriving fails at BODY', async () => {
    const site = createHttpServer((req, res) => {
      if (req.url !== '/endless') {
        res.writeHead(200, { 'content-length': '100' }).write('{');
        return;
      }
      // A body that never ends: read whole, the check could only run out of time.
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const more = () => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on('drain', more);
      more();
    });
    site.on('connection', track);
    await listen(site);
    try {
      const base = `http://127.0.0.1:${portOf(site)}`;
      const big = await fetchDirect({
        url: `${base}/endless`,
        timeoutMs: 2_000,
        expectedStatus: 200,
        maxBodyBytes: 1000,
      });
      expect(big).toMatchObject({ ok: true, status: 200 });
      expect(big.body).toHaveLength(1000);
      const stalled = await fetchDirect({
        url: `${base}/stall`,
        timeoutMs: BODY_TIMEOUT_MS,
        expectedStatus: 200,
      });
      expect(stalled).toMatchObject({ ok: false, failure: { stage: 'BODY', code: 'timeout' } });
    } finally {
      site.closeAllConnections();
      await new Promise((r) => site.close(r));
    }
  });
});
