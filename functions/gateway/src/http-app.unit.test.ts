import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { CredentialCache, StaticCredentialResolver } from './credentials.js';
import { MAX_PIPELINED_FETCHES } from './http-app.js';
import { jsonLogger, type Logger } from './logger.js';
import { TargetGuard } from './target-guard.js';
import { testHttpListener } from './testing/http-listener.js';
import { GatewayWorker } from './worker.js';

function app(log = jsonLogger('error', () => {})) {
  const worker = new GatewayWorker({
    credentials: new CredentialCache(new StaticCredentialResolver(), 1000, Date.now),
    log,
    now: Date.now,
    monotonicNow: () => performance.now(),
    maxStaleAgeMs: Number.POSITIVE_INFINITY,
    stickyTableSize: 10,
    outcomeQueueSize: 10,
  });
  return testHttpListener(worker, { log });
}

/** The listener on a real socket: /v1/fetch is served on Node's own request objects, not by app.request. */
async function listen(log?: Logger): Promise<{ url: string; port: number; close: () => Promise<void> }> {
  const server = http.createServer(app(log));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/**
 * One exchange on a fresh socket, written as given: what a client sees, bytes and all — read until
 * `answers` status lines have come and then nothing for `waitMs`. (A quiet window from the first byte cut a
 * pipelined exchange short when the worker stalled between two of its answers.)
 */
function raw(port: number, request: string, answers = 1, waitMs = 300): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    let timer: NodeJS.Timeout | undefined;
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      got += d;
      clearTimeout(timer);
      if ((got.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0) >= answers)
        timer = setTimeout(() => s.destroy(), waitMs);
    });
    s.on('close', () => resolve(got));
    s.on('error', reject);
    // Idle that long, it ends with what came (under the test's own 5 s): a missing answer fails on the
    // statuses read, not as a timed-out test.
    s.setTimeout(3_000, () => s.destroy());
    s.write(request);
  });
}

let srv: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  srv = await listen();
});
afterAll(() => srv.close());

const post = (
  body: string,
  headers: Record<string, string> = { authorization: 'Bearer tok' },
  base = srv.url,
) => fetch(`${base}/v1/fetch`, { method: 'POST', body, headers });

const basic = (userPass: string) => `Basic ${Buffer.from(userPass).toString('base64')}`;
const cloudRunIam = { 'x-serverless-authorization': 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig' };
const metricsOf = async (base: string) => (await fetch(`${base}/metrics`)).text();

describe('HTTP listener', () => {
  it.each([
    ['no credentials', () => post('{}', {}), 401, 'unauthorized'],
    ['a wrong token', () => post('{}', { authorization: 'Bearer nope' }), 401, 'unauthorized'],
    ['a body that is not JSON', () => post('not json'), 400, 'bad_request'],
    ['an ftp URL', () => post(JSON.stringify({ url: 'ftp://x/' })), 400, 'bad_request'],
    ['method TRACE', () => post(JSON.stringify({ url: 'http://x/', method: 'trace' })), 400, 'bad_request'],
    ['method TRACK', () => post(JSON.stringify({ url: 'http://x/', method: 'TRACK' })), 400, 'bad_request'],
    [
      'a header with a newline',
      () => post(JSON.stringify({ url: 'http://x/', headers: { a: 'b\r\nc: d' } })),
      400,
      'bad_request',
    ],
    [
      'a body over the limit',
      () => post(JSON.stringify({ url: 'http://x/', body: 'x'.repeat(2000) })),
      413,
      'body_too_large',
    ],
    ['no snapshot yet', () => post(JSON.stringify({ url: 'http://example.com/' })), 503, 'no_snapshot'],
    // docs/deploy.md's Cloud Run call: IAM's token in X-Serverless-Authorization, the client user in
    // Authorization. Past authentication, the request meets the missing snapshot.
    [
      'a client user in Authorization beside a Cloud Run identity token',
      () =>
        post(JSON.stringify({ url: 'http://example.com/' }), { ...cloudRunIam, authorization: basic('c:s') }),
      503,
      'no_snapshot',
    ],
    [
      'a wrong client user beside a Cloud Run identity token',
      () =>
        post(JSON.stringify({ url: 'http://example.com/' }), { ...cloudRunIam, authorization: basic('c:x') }),
      401,
      'unauthorized',
    ],
    ['a Cloud Run identity token alone', () => post('{}', cloudRunIam), 401, 'unauthorized'],
    [
      'a client user in Proxy-Authorization',
      () => post(JSON.stringify({ url: 'http://example.com/' }), { 'proxy-authorization': basic('c:s') }),
      503,
      'no_snapshot',
    ],
    [
      'the path with a query string',
      () =>
        fetch(`${srv.url}/v1/fetch?x=1`, {
          method: 'POST',
          body: 'not json',
          headers: { authorization: 'Bearer tok' },
        }),
      400,
      'bad_request',
    ],
  ])('answers %s with %i', async (_label, send, status, code) => {
    const r = await send();
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(((await r.json()) as { error: string }).error).toBe(code);
    // Every refusal says why twice: in the body and in the header (docs/gateway.md § Error codes).
    expect(r.headers.get('x-proxyplane-error')).toBe(code);
  });

  it('asks for credentials the way it always did', async () => {
    const r = await post('{}', {});
    expect(r.headers.get('www-authenticate')).toBe('Bearer, Basic realm="proxyplane"');
  });

  it('says which way a body is wrong: not JSON, or not the schema', async () => {
    const issues = async (res: Promise<Response>) =>
      ((await (await res).json()) as { issues: Array<{ path: string; message: string }> }).issues;
    expect(await issues(post('not json'))).toEqual([{ path: '', message: 'the body is not JSON' }]);
    expect(await issues(post(''))).toEqual([{ path: '', message: 'the body is not JSON' }]);
    expect((await issues(post(JSON.stringify({ url: 'ftp://x/' }))))[0]?.path).toBe('url');
    // Request.json()'s decoding: a UTF-8 byte-order mark is not part of the JSON.
    expect((await issues(post(`\ufeff${JSON.stringify({ url: 'ftp://x/' })}`)))[0]?.path).toBe('url');
  });

  it('counts a body over the limit among the fetch requests', async () => {
    const own = await listen();
    try {
      const body = JSON.stringify({ url: 'http://x/', body: 'x'.repeat(2000) });
      const r = await post(body, { authorization: 'Bearer tok' }, own.url);
      expect(r.status).toBe(413);
      expect(await metricsOf(own.url)).toContain(
        'gateway_requests_total{listener="fetch",route="-",outcome="body_too_large"} 1',
      );
    } finally {
      await own.close();
    }
  });

  it('refuses a body without Content-Length once it grows past the limit', async () => {
    const chunk = 'x'.repeat(600);
    const text = await raw(
      srv.port,
      'POST /v1/fetch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nTransfer-Encoding: chunked\r\n\r\n' +
        `258\r\n${chunk}\r\n258\r\n${chunk}\r\n0\r\n\r\n`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toContain('x-proxyplane-error: body_too_large');
    expect(text.endsWith('{"error":"body_too_large"}')).toBe(true);
  });

  it.each([
    ['without Content-Length', 'Transfer-Encoding: chunked', `100\r\n${'x'.repeat(100)}`],
    ['with a Content-Length it never reaches', 'Content-Length: 500', 'x'.repeat(100)],
  ])(
    'counts a client that leaves mid-body %s as client_closed, and logs nothing',
    async (_l, framing, part) => {
      const lines: string[] = [];
      const own = await listen(jsonLogger('debug', (l) => void lines.push(l)));
      try {
        const s = net.connect(own.port, '127.0.0.1');
        await new Promise<void>((r) => s.once('connect', () => r()));
        s.write(
          `POST /v1/fetch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n${framing}\r\n\r\n${part}`,
        );
        await new Promise((r) => setTimeout(r, 50));
        s.destroy();
        const counted = 'gateway_requests_total{listener="fetch",route="-",outcome="client_closed"} 1';
        const deadline = Date.now() + 2_000;
        while (!(await metricsOf(own.url)).includes(counted) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        const text = await metricsOf(own.url);
        expect(text).toContain(counted);
        // Neither a 400 counted for a body nobody finished, nor an ERROR line per abandoned request.
        expect(text).not.toContain('outcome="bad_request"');
        expect(lines).toEqual([]);
      } finally {
        await own.close();
      }
    },
  );

  it('refuses a client without credentials before reading a body without Content-Length', async () => {
    // One chunk under the limit and no end: a gateway that read the body first would hold it, and this
    // connection, until the client finished it — anyone could park GATEWAY_FETCH_MAX_BODY_BYTES per socket.
    const text = await raw(
      srv.port,
      `POST /v1/fetch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n${'x'.repeat(256)}\r\n`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toContain('x-proxyplane-error: unauthorized');
  });

  it('refuses a Content-Length over the limit before any of the body is sent, and before authentication', async () => {
    // No body follows the head: the answer can only come from the declared length.
    const text = await raw(srv.port, 'POST /v1/fetch HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toContain('\r\nContent-Length: 26\r\n');
  });

  it('refuses a client without credentials before reading a declared body', async () => {
    const text = await raw(srv.port, 'POST /v1/fetch HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toContain('www-authenticate: Bearer, Basic realm="proxyplane"');
  });

  it.each(['/v1/fetch?x=1', '/v1/%66etch', '/v1/./fetch', '/v1/x/../fetch', '/v1/%2e/fetch'])(
    'takes %s for /v1/fetch, as the Hono route did',
    async (path) => {
      const text = await raw(srv.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
      expect(text).toMatch(/^HTTP\/1\.1 401 /);
    },
  );

  it('leaves other methods and paths to the app: 404 JSON', async () => {
    for (const [method, path] of [
      ['GET', '/v1/fetch'],
      ['POST', '/v1/fetch/'],
      ['POST', '/v1/other'],
    ] as const) {
      const r = await fetch(`${srv.url}${path}`, { method, headers: { authorization: 'Bearer tok' } });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ error: 'not_found' });
    }
  });

  it('reports health, readiness and metrics', async () => {
    expect(await (await fetch(`${srv.url}/healthz`)).json()).toMatchObject({
      ok: true,
      phase: 'awaiting_snapshot',
      accepting: false,
    });
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(503);
    expect(await metricsOf(srv.url)).toContain('gateway_accepting 0');
  });
});

// JSON.parse keeps the last of a repeated key: {"url":A,"url":B} fetched B although the caller may have
// read A. Refused as the API refuses one (duplicate_key), before a route is picked or a proxy dialled.
/**
 * A worker whose snapshot holds one upstream, `p` on 127.0.0.1:`port` (credentials u:p), routed for every
 * host.
 */
async function oneProxyWorker(port: number): Promise<GatewayWorker> {
  const iso = (ms: number) => new Date(ms).toISOString();
  const creds = new StaticCredentialResolver();
  creds.replace({ up: { username: 'u', password: 'p' } });
  const worker = new GatewayWorker({
    credentials: new CredentialCache(creds, 60_000, Date.now),
    log: jsonLogger('error', () => {}),
    now: Date.now,
    monotonicNow: () => performance.now(),
    maxStaleAgeMs: Number.POSITIVE_INFINITY,
    workerId: 'w1',
    stickyTableSize: 10,
    outcomeQueueSize: 10,
  });
  const snapshot = buildSnapshot(
    {
      schemaVersion: 1,
      version: 1,
      ownershipEpoch: 1,
      workerId: 'w1',
      generatedAt: iso(Date.now()),
      validUntil: iso(Date.now() + 600_000),
      routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' }],
      proxies: [
        {
          name: 'p',
          host: '127.0.0.1',
          port,
          protocol: 'http',
          capacity: 5,
          expiresAt: iso(Date.now() + 3_600_000),
          usableUntil: iso(Date.now() + 3_000_000),
          attributes: {},
          credentialsRef: { secret: 'up', version: 'latest' },
        },
      ],
    },
    sha256Hex,
  );
  expect(await worker.applySnapshot(snapshot)).toMatchObject({ ok: true });
  return worker;
}

describe('POST /v1/fetch with a key repeated in one object', () => {
  let dialled = 0;
  const proxy = net.createServer((s) => {
    dialled++;
    s.on('error', () => {});
    let buf = '';
    let connected = false;
    s.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      buf = buf.slice(end + 4);
      if (!connected) {
        connected = true;
        s.write('HTTP/1.1 200 Connection established\r\n\r\n');
      } else s.end('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nserved');
    });
  });
  let gateway: http.Server;
  let base: string;

  beforeAll(async () => {
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const log = jsonLogger('error', () => {});
    const worker = await oneProxyWorker((proxy.address() as AddressInfo).port);
    gateway = http.createServer(
      // The listener's own guard (every name public, never dialled: the proxy answers as the target) and
      // its bearer token 'tok'.
      testHttpListener(worker, {
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
    gateway.closeAllConnections();
    await new Promise((r) => gateway.close(r));
    await new Promise((r) => proxy.close(r));
  });

  const send = (body: string) =>
    fetch(`${base}/v1/fetch`, { method: 'POST', body, headers: { authorization: 'Bearer tok' } });

  it('refuses it with 400 bad_request, issue duplicate_key, and fetches nothing', async () => {
    const r = await send('{"url":"http://a.example/","url":"http://b.example/"}');
    expect(r.status).toBe(400);
    expect(r.headers.get('x-proxyplane-error')).toBe('bad_request');
    expect(await r.json()).toEqual({
      error: 'bad_request',
      issues: [
        {
          path: 'url',
          code: 'duplicate_key',
          message: 'appears more than once in its object (which value was meant?)',
        },
      ],
    });
    const nested = await send('{"url":"http://b.example/","headers":{"x-a":"1","x-a":"2"}}');
    expect(nested.status).toBe(400);
    expect(((await nested.json()) as { issues: { path: string }[] }).issues[0]?.path).toBe('headers.x-a');
    expect(dialled).toBe(0);
  });

  it('fetches the same body said once (so the refusal above is the repeat, not the setup)', async () => {
    const before = dialled;
    const r = await send('{"url":"http://b.example/"}');
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('served');
    expect(dialled).toBe(before + 1);
  });
});

// Node parses and emits every request pipelined on a connection until written answers back up, and
// /v1/fetch writes one small answer at a time: each fetch waiting its turn (its request, response and
// start) stayed in memory, ~2.3 KB per ~230 bytes sent — one connection that pipelined and never read took
// a 512 MiB gateway down. At most MAX_PIPELINED_FETCHES wait; one more closes the connection.
describe('POST /v1/fetch pipelined deeper than MAX_PIPELINED_FETCHES', () => {
  const body = 'x'.repeat(40);
  const unauthenticated = `POST /v1/fetch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  // The one running, MAX_PIPELINED_FETCHES waiting, the one refused, and what Node still parses, and
  // emits, from the read it was in when the connection was closed: one read is at most 64 KiB.
  const bound = MAX_PIPELINED_FETCHES + 2 + Math.ceil(65_536 / unauthenticated.length);

  /** The listener on a real socket: the requests Node emits, and each connection's server side. */
  async function serve(listener: ReturnType<typeof testHttpListener>) {
    const server = http.createServer(listener);
    server.on('checkContinue', listener.checkContinue);
    // Emitted, and how many at most were held at once: emitted, their response not closed yet.
    let emitted = 0;
    let closed = 0;
    let peak = 0;
    server.on('request', (_req, res: http.ServerResponse) => {
      emitted++;
      peak = Math.max(peak, emitted - closed);
      res.once('close', () => void closed++);
    });
    const conns: net.Socket[] = [];
    server.on('connection', (s) => void conns.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    return {
      port,
      base: `http://127.0.0.1:${port}`,
      emitted: () => emitted,
      peak: () => peak,
      conns,
      close: () => {
        server.closeAllConnections();
        return new Promise<void>((r) => server.close(() => r()));
      },
    };
  }

  /** Polls (at most `maxMs`) until `done`; no assertion on how long it took. */
  async function until(done: () => boolean | Promise<boolean>, maxMs = 5_000): Promise<boolean> {
    for (let i = 0; i < maxMs / 20; i++) {
      if (await done()) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return done();
  }

  /** 20,000 copies of one request in four large writes, read or not. */
  const flood = (s: net.Socket, request: string) => {
    const chunk = request.repeat(5_000);
    for (let i = 0; i < 4; i++) s.write(chunk);
  };

  it('closes a connection that pipelines without credentials and never reads, having held few', async () => {
    const srv = await serve(app());
    try {
      const s = net.connect(srv.port, '127.0.0.1');
      s.on('error', () => {});
      await new Promise<void>((r) => s.once('connect', () => r()));
      // Never read: no 'data' listener, and the socket paused. The 401s go out while the kernel's buffers
      // take them — all of them, when the server reads in small pieces — and queue once those are full:
      // so the flood goes on until the connection is closed (or 400,000 were sent: the kernel's buffers
      // here filled at ~16,000, and a host whose TCP buffers are many times larger must not run out first).
      s.pause();
      const server = () => srv.conns[0];
      const chunk = unauthenticated.repeat(5_000);
      let sent = 0;
      const pump = () => {
        while (!server()?.destroyed && !s.destroyed && sent < 400_000) {
          sent += 5_000;
          if (!s.write(chunk)) return void s.once('drain', pump);
        }
      };
      pump();
      // Some 16,000 401s (4 MB) before the kernel's buffers fill here: a loaded machine may take seconds.
      expect(await until(() => server()?.destroyed === true, 20_000)).toBe(true);
      expect(srv.peak()).toBeLessThanOrEqual(bound);
      expect(srv.emitted()).toBeLessThan(sent);
      expect(await metricsOf(srv.base)).toMatch(
        /gateway_requests_total\{listener="fetch",route="-",outcome="pipelined_too_deep"\} [1-9]/,
      );
      s.destroy();
    } finally {
      await srv.close();
    }
  }, 30_000);

  it('closes one pipelining behind a fetch that never ends, calling that fetch off', async () => {
    const worker = await oneProxyWorker(9);
    let lookedUp!: () => void;
    const lookingUp = new Promise<void>((r) => {
      lookedUp = r;
    });
    // A nameserver that never answers: the first fetch waits on its look-up until the client leaves.
    const guard = new TargetGuard(
      parseAllowList([]).allow,
      () => {
        lookedUp();
        return new Promise<string[]>(() => {});
      },
      { ttlMs: 0, maxEntries: 10, now: Date.now },
    );
    const srv = await serve(testHttpListener(worker, { guard, maxTimeoutMs: 600_000 }));
    try {
      const s = net.connect(srv.port, '127.0.0.1');
      s.on('error', () => {});
      s.on('data', () => {});
      await new Promise<void>((r) => s.once('connect', () => r()));
      const fetchBody = JSON.stringify({ url: 'http://slow.example/' });
      s.write(
        `POST /v1/fetch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nContent-Length: ${fetchBody.length}\r\n\r\n${fetchBody}`,
      );
      await lookingUp;
      flood(s, unauthenticated);
      expect(await until(() => srv.conns.length === 1 && srv.conns[0]!.destroyed)).toBe(true);
      // The fetch in flight never ends, so nothing drains the queue: the count emitted is bounded too.
      expect(srv.emitted()).toBeLessThanOrEqual(bound + 1);
      expect(srv.peak()).toBeLessThanOrEqual(bound + 1);
      // The fetch in flight is called off as when its client leaves, and nothing stays counted open.
      const gone = 'gateway_requests_total{listener="fetch",route="-",outcome="client_closed"} 1';
      expect(await until(async () => (await metricsOf(srv.base)).includes(gone))).toBe(true);
      expect(worker.totals()).toEqual({ active: 0, reserved: 0 });
      s.destroy();
    } finally {
      await srv.close();
    }
  }, 15_000);

  it('still answers requests pipelined up to the limit, in order', async () => {
    const srv = await serve(app());
    try {
      const ask = (b: string, auth = 'Authorization: Bearer tok\r\n') =>
        `POST /v1/fetch HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${b.length}\r\n\r\n${b}`;
      const three = ask('not json') + ask(JSON.stringify({ url: 'http://example.com/' })) + ask('{}', '');
      const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
      expect(statuses(await raw(srv.port, three, 3))).toEqual(['400', '503', '401']);
      // One running and MAX_PIPELINED_FETCHES waiting, in one write: every one answered.
      const full = ask('not json').repeat(MAX_PIPELINED_FETCHES + 1);
      expect(statuses(await raw(srv.port, full, MAX_PIPELINED_FETCHES + 1))).toEqual(
        Array.from({ length: MAX_PIPELINED_FETCHES + 1 }, () => '400'),
      );
      expect(await metricsOf(srv.base)).not.toContain('pipelined_too_deep');
    } finally {
      await srv.close();
    }
  });
});
