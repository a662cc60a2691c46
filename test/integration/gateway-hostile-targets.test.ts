// Hostile or merely unusual targets (the websites a crawler visits) never hang a request or take an
// upstream slot for good, and what squid relays the gateway relays too. A real gateway process with one slot per upstream (a leaked slot makes the next request a 503
// no_upstream) and two real upstreams: the emulator's forward proxy, which does not filter destinations
// (so /v1/fetch goes through a CONNECT tunnel to the pinned address, as every https:// fetch does), and
// a scripted proxy answering absolute-form requests itself — which also serves as the target at the end
// of the tunnel, with the same exact bytes.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  postFetch,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { pollUntil } from '../support/poll.js';
import { BIG_COOKIE, BODY, scriptedUpstream } from '../support/scripted-proxy.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Routed to the scripted upstream (absolute form); it never connects anywhere. */
const SCRIPTED = '127.0.0.5';
/** Well under GATEWAY_FETCH_TIMEOUT_MS and the idle timeout: an answer must come from the fix, not a bound. */
const CLIENT_WAIT_MS = 4_000;
/** Over the 70 kB of /cl, well under what /endless sends before the fetch timeout. */
const MAX_RESPONSE_BYTES = 200_000;
/** More than loopback's socket buffers take from a peer that has stopped reading. */
const STALLED_BODY_BYTES = 8_000_000;

describe('gateway facing hostile targets', () => {
  let emu: ForwardProxy;
  const scripted = scriptedUpstream();
  let scriptedPort: number;
  let gw: GatewayProcess;

  beforeAll(async () => {
    emu = createForwardProxy({ credentials: 'up:up-pass' });
    const { port } = await emu.listen();
    scriptedPort = await scripted.listen();
    gw = await startGateway(
      snapshotFile({
        upstreams: [`http://up:up-pass@127.0.0.1:${port}`, `http://up:up-pass@127.0.0.1:${scriptedPort}`],
        routing: [
          {
            name: 'scripted',
            match: { hosts: [SCRIPTED] },
            selector: { pool: 'scripted' },
            policy: 'round-robin',
          },
          { name: 'tunnel', match: { hosts: ['*'] }, selector: { pool: 'tunnel' }, policy: 'round-robin' },
        ],
        attributes: (i) => ({ pool: ['tunnel', 'scripted'][i]! }),
        filtersDestinations: (i) => i === 1,
        capacity: 1,
      }),
      {
        GATEWAY_CLIENT_USERS: 'crawler:s3cret',
        GATEWAY_SSRF_ALLOW: `127.0.0.1:${scriptedPort},${SCRIPTED}:80`,
        GATEWAY_FETCH_TIMEOUT_MS: '10000',
        GATEWAY_FETCH_MAX_RESPONSE_BYTES: String(MAX_RESPONSE_BYTES),
        GATEWAY_FETCH_MAX_BODY_BYTES: String(4 * STALLED_BODY_BYTES),
      },
    );
  });

  afterAll(async () => {
    await gw?.stop();
    await emu?.close();
    await scripted.close();
  });

  const fetchVia = (url: string, timeoutMs?: number, signal = AbortSignal.timeout(CLIENT_WAIT_MS)) =>
    fetch(`http://127.0.0.1:${gw.httpPort}/v1/fetch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'proxy-authorization': AUTH },
      body: JSON.stringify({ url, timeoutMs }),
      signal,
    });
  const bigFetch = (url: string) => postFetch(gw.httpPort, { url }, AUTH, CLIENT_WAIT_MS);
  const get = (url: string) =>
    rawExchange(
      gw.proxyPort,
      `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
      { timeoutMs: CLIENT_WAIT_MS },
    );
  const noLoad = async () => {
    const h = await pollUntil(gw.health, (x) => x.load.active + x.load.reserved === 0, 5_000, 'no load');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  };

  it.each([
    ['a CONNECT tunnel (as every https:// fetch)', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])('POST /v1/fetch through %s: a 101 is a 502, and the slot comes back', async (_, base) => {
    const r = await fetchVia(`${base()}/101`);
    expect(r.status).toBe(502);
    expect(await r.json()).toEqual({ error: 'target_bad_response' });
    await noLoad();
    const next = await fetchVia(`${base()}/cl`);
    expect(next.status).toBe(200);
    expect(Buffer.from(await next.arrayBuffer()).equals(BODY)).toBe(true);
  });

  // Transfer-Encoding: gzip, chunked — Node undoes the chunking only, and a relay that drops the field
  // handed gzip bytes over as the plain body.
  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: a body coded beyond chunked is a 502, and the slot comes back',
    async (_, base) => {
      const r = await fetchVia(`${base()}/gzip-chunked`);
      expect(r.status).toBe(502);
      expect(await r.json()).toEqual({ error: 'target_bad_response', status: 200 });
      const reset = await fetchVia(`${base()}/gzip-chunked-205`);
      expect(reset.status).toBe(502);
      expect(await reset.json()).toEqual({ error: 'target_bad_response', status: 205 });
      // A 304 has no body to mislabel: it goes through.
      const notModified = await fetchVia(`${base()}/gzip-chunked-304`);
      expect(notModified.status).toBe(304);
      await noLoad();
    },
  );

  it('the proxy listener in absolute form: gzip, chunked goes to an HTTP/1.1 client labelled, to an HTTP/1.0 one not at all', async () => {
    const r11 = await get(`http://${SCRIPTED}/gzip-chunked`);
    expect(r11.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(r11.text).toMatch(/\r\nTransfer-Encoding: gzip, chunked\r\n/i);
    const r10 = await rawExchange(
      gw.proxyPort,
      `GET http://${SCRIPTED}/gzip-chunked HTTP/1.0\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
      { timeoutMs: CLIENT_WAIT_MS },
    );
    expect(r10.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r10.text).toContain('X-Proxyplane-Error: target_bad_response');
    await noLoad();
  });

  it('the proxy listener in absolute form: a 101 is a 502, and the slot comes back', async () => {
    const r = await get(`http://${SCRIPTED}/101`);
    expect(r.closedBy).toBe('server');
    expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r.text).toContain('X-Proxyplane-Error: target_bad_response');
    await noLoad();
    expect((await get(`http://${SCRIPTED}/cl`)).text).toMatch(/^HTTP\/1\.1 200 /);
  });

  // Node takes a 101 without `Connection: upgrade` for a whole, body-less answer and pools its connection:
  // the 101 went to the client as an answer, and what the upstream sent next on that connection (squid
  // 3.2–4 forwards the target's next answer) was read as the answer to the next request on it — another
  // client's. (/v1/fetch never relayed it: its relay refuses a status under 200 and destroys the unread
  // answer, so its connection was not pooled either; fetch-absolute.unit.test.ts has its own guard.)
  it.each([['/101-bare'], ['/101-upgrade-only']])(
    'the proxy listener in absolute form: a 101 without Connection: upgrade (%s) is a 502, and its connection is not reused',
    async (path) => {
      const r = await get(`http://${SCRIPTED}${path}`);
      expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
      expect(r.text).toContain('X-Proxyplane-Error: target_bad_response');
      await noLoad();
      for (let i = 0; i < 3; i++) {
        const next = await get(`http://${SCRIPTED}/cl`);
        expect(next.text).toMatch(/^HTTP\/1\.1 200 /);
        expect(next.text).not.toContain('leaked');
        expect(next.text).toContain('X-Framing: cl');
      }
    },
  );

  // Pinned, such a head was relayed as it came: no `Connection: close`, the target's keep-alive kept
  // open, and a client that pipelined waited on a request the gateway had dropped.
  it.each([
    ['pinned', '/101', () => `http://127.0.0.1:${scriptedPort}`],
    ['pinned', '/bare-lf', () => `http://127.0.0.1:${scriptedPort}`],
    ['in absolute form', '/bare-lf', () => `http://${SCRIPTED}`],
  ])('the proxy listener %s: a head it cannot parse (%s) is a 502 that closes', async (_, path, base) => {
    const r = await get(`${base()}${path}`);
    expect(r.closedBy).toBe('server');
    expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r.text).toContain('X-Proxyplane-Error: target_bad_response');
    expect(r.text).toMatch(/\r\nConnection: close\r\n/i);
    await noLoad();
  });

  it.each([
    ['pinned', () => `http://127.0.0.1:${scriptedPort}`],
    ['in absolute form', () => `http://${SCRIPTED}`],
  ])('the proxy listener %s: a status outside 100–599 (999) is relayed, as any answer', async (_, base) => {
    const r = await get(`${base()}/999`);
    expect(r.text).toMatch(/^HTTP\/1\.1 999 Odd\r\n/);
    expect(r.text).toMatch(/\r\n\r\nok$/);
    await noLoad();
  });

  // A 502 said the chain failed: a crawler tried other proxies against a deliberate refusal.
  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: a status past 599 (999) is relayed, as the proxy listener relays it',
    async (_, base) => {
      const body = JSON.stringify({ url: `${base()}/999` });
      const r = await rawExchange(
        gw.httpPort,
        `POST /v1/fetch HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nProxy-Authorization: ${AUTH}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        { timeoutMs: CLIENT_WAIT_MS },
      );
      expect(r.text).toMatch(/^HTTP\/1\.1 999 /);
      expect(r.text).not.toContain('target_bad_response');
      await noLoad();
    },
  );

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: a 17 kB response head (squid allows 64 KB) goes through',
    async (_, base) => {
      const r = await bigFetch(`${base()}/big-head`);
      expect(r.status).toBe(200);
      expect(r.headers['set-cookie']).toEqual([`big=${BIG_COOKIE}`]);
      expect(r.body).toBe('ok');
      await noLoad();
    },
  );

  it('the proxy listener in absolute form: a 17 kB response head goes through', async () => {
    const r = await get(`http://${SCRIPTED}/big-head`);
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(r.text).toContain(`\r\nSet-Cookie: big=${BIG_COOKIE}\r\n`);
    expect(r.text.endsWith('\r\n\r\nok')).toBe(true);
    await noLoad();
  });

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: a target slower than the timeout is a 504, and the slot comes back',
    async (_, base) => {
      // /slow answers after 1.5 s.
      const r = await fetchVia(`${base()}/slow`, 300);
      expect(r.status).toBe(504);
      expect(await r.json()).toEqual({ error: 'fetch_timeout' });
      await noLoad();
      expect((await fetchVia(`${base()}/cl`)).status).toBe(200);
    },
  );

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])('POST /v1/fetch through %s: a client leaving mid-body gives the slot back', async (_, base) => {
    const abort = new AbortController();
    const r = await fetchVia(`${base()}/endless`, undefined, abort.signal);
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    abort.abort();
    await noLoad();
    expect((await fetchVia(`${base()}/cl`)).status).toBe(200);
  });

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: a body over GATEWAY_FETCH_MAX_RESPONSE_BYTES is cut off, and the slot comes back',
    async (_, base) => {
      const r = await fetchVia(`${base()}/endless`);
      expect(r.status).toBe(200);
      // Not a complete-looking response: the connection breaks inside the chunked body.
      const reader = r.body!.getReader();
      let got = 0;
      const read = async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return 'ended';
          got += value.length;
        }
      };
      await expect(read()).rejects.toThrow();
      expect(got).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
      expect(got).toBeGreaterThan(MAX_RESPONSE_BYTES - 3 * 8192);
      await noLoad();
      expect((await fetchVia(`${base()}/cl`)).status).toBe(200);
    },
  );

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: fields a Connection header names stay on their hop, both ways',
    async (_, base) => {
      const before = scripted.state.seen.length;
      const r = await postFetch(
        gw.httpPort,
        { url: `${base()}/hop`, headers: { Connection: 'X-Mine', 'X-Mine': 'hop', 'X-Also': 'end' } },
        AUTH,
        CLIENT_WAIT_MS,
      );
      expect(r).toMatchObject({ status: 200, body: 'ok' });
      // The target's `Connection: keep-alive, X-Hop`: X-Hop is the target's hop's, X-End the client's.
      expect(r.headers['x-hop']).toBeUndefined();
      expect(r.headers['x-end']).toBe('kept');
      const seen = scripted.state.seen.slice(before);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.head).not.toMatch(/\r\nx-mine:/i);
      expect(seen[0]!.head).toMatch(/\r\nx-also: end\r\n/i);
      await noLoad();
    },
  );

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    "POST /v1/fetch through %s: a target cannot pass its answer off as the gateway's refusal",
    async (_, base) => {
      const r = await postFetch(gw.httpPort, { url: `${base()}/spoof` }, AUTH, CLIENT_WAIT_MS);
      expect(r).toMatchObject({ status: 502, body: 'no' });
      // Only the gateway sets X-Proxyplane-*: a client tells the target's 502 from the gateway's by them.
      // (X-Proxyplane-Content-Length: the target's declared length, the answer itself being chunked.)
      expect(
        Object.keys(r.headers)
          .filter((h) => h.startsWith('x-proxyplane-'))
          .sort(),
      ).toEqual(['x-proxyplane-content-length', 'x-proxyplane-route']);
      expect(r.headers['x-proxyplane-route']).not.toBe('forged');
      await noLoad();
    },
  );

  it.each([
    ['a CONNECT tunnel', () => `http://127.0.0.1:${scriptedPort}`],
    ['absolute form', () => `http://${SCRIPTED}`],
  ])(
    'POST /v1/fetch through %s: an answer that comes before the body was taken leaves no connection open',
    async (_, base) => {
      // /early-stall answers from the request head, then never reads: most of the body stays unsent.
      const r = await postFetch(
        gw.httpPort,
        { url: `${base()}/early-stall`, method: 'POST', body: 'a'.repeat(STALLED_BODY_BYTES) },
        AUTH,
        CLIENT_WAIT_MS,
      );
      expect(r).toMatchObject({ status: 200, body: 'early' });
      await noLoad();
      // Idle pooled connections go after GATEWAY_UPSTREAM_KEEPALIVE_MS (4 s); a stuck one never did.
      const h = await pollUntil(gw.health, (x) => x.sockets.upstreams === 0, 10_000, 'no upstream socket');
      expect(h.sockets.upstreams).toBe(0);
      expect((await fetchVia(`${base()}/cl`)).status).toBe(200);
    },
    30_000,
  );

  /** Plain HTTP to the scripted target through a pinned tunnel; the client closes once the answer is in. */
  const pinnedGet = async (path: string, last: string) => {
    // One slot per upstream: the session before must have given it back.
    await noLoad();
    const s = net.connect({ port: gw.proxyPort, host: '127.0.0.1' });
    s.on('error', () => {});
    let got = '';
    s.on('data', (c: Buffer) => {
      got += c.toString('latin1');
    });
    s.write(
      `GET http://127.0.0.1:${scriptedPort}${path} HTTP/1.1\r\nHost: t.example\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    await pollUntil(
      async () => got,
      (t) => t.endsWith(last),
      CLIENT_WAIT_MS,
      `the answer to ${path}`,
    );
    // Read whole (Content-Length): the client closes its connection, as after any answer.
    s.end();
    return got;
  };

  it('the proxy listener pinned: a target that keeps its connection open after answering does not hold the slot once the client leaves', async () => {
    // /hop answers with Content-Length and `Connection: keep-alive`, ignoring the request's `close`.
    expect(await pinnedGet('/hop', '\r\n\r\nok')).toMatch(/^HTTP\/1\.1 200 /);
    const h = await pollUntil(
      gw.health,
      (x) => x.sockets.proxyClients === 0 && x.sockets.upstreams === 0,
      // Idle pooled connections of the tests before go within GATEWAY_UPSTREAM_KEEPALIVE_MS (4 s).
      10_000,
      'no proxy client, no upstream socket',
    );
    expect(h.load).toEqual({ active: 0, reserved: 0 });
    // One slot per upstream: the next request gets it.
    expect(await pinnedGet('/hop', '\r\n\r\nok')).toMatch(/^HTTP\/1\.1 200 /);
    await noLoad();
  }, 30_000);

  it('the proxy listener pinned: the target hop’s fields stay on that hop, and the client is told the connection closes', async () => {
    expect(await pinnedGet('/hop', '\r\n\r\nok')).toBe(
      'HTTP/1.1 200 OK\r\nX-End: kept\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
    );
    // An interim head passes (to an HTTP/1.1 client) without closing; the final one closes.
    expect(await pinnedGet('/103', '\r\n\r\nfinal')).toBe(
      'HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n' +
        'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nfinal',
    );
    // Only the head is rewritten: a chunked body arrives as the target framed it, byte for byte — its
    // trailers too, a forged X-Proxyplane-* among them (only a re-chunked body's are rewritten).
    const trailers = '0\r\nX-Sum: 42\r\nX-Proxyplane-Error: no_upstream\r\n\r\n';
    const chunked = Buffer.from(await pinnedGet('/chunked', trailers), 'latin1');
    const end = chunked.indexOf('\r\n\r\n') + 4;
    expect(chunked.toString('latin1', 0, end)).toBe(
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\nX-Framing: chunked\r\nConnection: close\r\n\r\n',
    );
    const framed = Buffer.concat([
      ...[
        [0, 1],
        [1, 40_000],
        [40_000, BODY.length],
      ].flatMap(([a, b]) => [
        Buffer.from(`${(b! - a!).toString(16)};ext=1\r\n`),
        BODY.subarray(a, b),
        Buffer.from('\r\n'),
      ]),
      Buffer.from(trailers),
    ]);
    expect(chunked.subarray(end).equals(framed)).toBe(true);
    await noLoad();
  }, 30_000);
});
