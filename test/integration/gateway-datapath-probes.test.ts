// The proxy listener's plain-HTTP data path against an upstream that misframes on purpose: kept-alive
// upstream connections are reused across clients (upstream-pool.ts), so a response whose framing the
// gateway did not consume exactly, or an exchange cut short, must never leave bytes on a connection that
// carries the next client's request. One raw upstream plays both roles: a forward proxy answering
// absolute-form requests itself (a route of entries marked filtersDestinations) and, after granting a
// CONNECT, the target at the end of a pinned tunnel. Every answer is the path's script, byte for byte.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  openTunnel,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { pollUntil } from '../support/poll.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Routed to the upstream in absolute form (pooled connections). */
const ABS = '127.0.0.5';
/** Routed to the same upstream, pinned (CONNECT to the checked address, origin form inside). */
const PIN = '127.0.0.7';
// Short, so the slow reader's tail below outlasts it (the cut it shows came a linger after the target's FIN).
const LINGER_MS = 300;
// The drip cases' own gateway lingers a second: the drip's gaps must stay inside a linger with room for a
// stall of this process, where the drip is written. At 300 ms with 50 ms gaps (and the gateway's 250 ms
// sweep) a loaded box's pause of a quarter second could cut the body short.
const DRIP_LINGER_MS = 1_000;
/** The '/drip' body: 30 bytes, one every DRIP_GAP_MS, so 3 of DRIP_LINGER_MS in all. */
const DRIP = 'abcdefghijklmnopqrstuvwxyz0123';
const DRIP_GAP_MS = DRIP_LINGER_MS / 10;
/** The '/big' body: the tail of it waits on a slow client's reads after the target is done. */
const BIG = 8 * 1024 * 1024;
/** A response a victim must never see: it is what a misframed answer leaves behind it. */
const EVIL = 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Evil: 1\r\n\r\nEVIL';

const ok = (body: string) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`;

/**
 * Sends raw bytes and returns what came back once an answer framed by Content-Length is whole, or the
 * server closed, or `timeoutMs` passed. A pinned target keeps its connection open after answering, so the
 * gateway's side stays open too: waiting for a close (rawExchange) always ran to the timeout, and a loaded
 * machine could leave the answer short when it struck. Ending on the answer needs no tight timeout.
 */
function exchangeUntilAnswered(
  port: number,
  bytes: string,
  timeoutMs = 15_000,
): Promise<{ text: string; endedBy: 'answer' | 'server' | 'timeout' }> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let text = '';
    const finish = (endedBy: 'answer' | 'server' | 'timeout') => {
      clearTimeout(timer);
      s.destroy();
      resolve({ text, endedBy });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
      if (end >= 0 && length !== undefined && text.length >= end + 4 + Number(length)) finish('answer');
    });
    s.once('close', () => finish('server'));
    s.on('error', () => {});
    s.write(bytes);
  });
}

/** The script of one path: what the upstream writes, and whether it then ends (FIN) or resets. */
/** Connections that ignore the gateway's FIN and never close (a hostile target's). */
const holding = new WeakSet<net.Socket>();

function answer(s: net.Socket, path: string): void {
  switch (path) {
    case '/hold':
      // A whole answer, then nothing: the connection is kept open whatever the other side does.
      holding.add(s);
      s.write(`HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 4\r\n\r\nheld`);
      return;
    case '/never':
      // Reads the request and never answers (a tarpit).
      holding.add(s);
      return;
    case '/stall-mid-body':
      // Part of the body, then silence on a connection kept open.
      holding.add(s);
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nstalled');
      return;
    case '/cl-and-te':
      // Both framings: a parser that took Content-Length would leave EVIL after a 6-byte body.
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${EVIL}`);
      return;
    case '/204-with-body':
      s.write(`HTTP/1.1 204 No Content\r\nContent-Length: ${EVIL.length}\r\n\r\n${EVIL}`);
      return;
    case '/304-with-body':
      s.write(`HTTP/1.1 304 Not Modified\r\nContent-Length: ${EVIL.length}\r\n\r\n${EVIL}`);
      return;
    case '/head-with-body':
      // Asked with HEAD, answered with the body a GET would have had.
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${EVIL.length}\r\n\r\n${EVIL}`);
      return;
    case '/100-then-evil':
      // An interim head with a body length (1xx have none), then a final answer.
      s.write(`HTTP/1.1 100 Continue\r\nContent-Length: ${EVIL.length}\r\n\r\n${ok('final')}`);
      return;
    case '/double-cl':
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: ${2 + EVIL.length}\r\n\r\nok${EVIL}`);
      return;
    case '/chunk-overflow':
      s.write(
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000002\r\nab\r\n0\r\n\r\n${EVIL}`,
      );
      return;
    case '/te-chunked-identity':
      // Not chunked as its last coding: a body read to the close (what looks like a chunked end and a
      // second answer is this client's body), on a connection that is never reused.
      s.write(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${EVIL}`);
      setTimeout(() => s.end(), 100);
      return;
    case '/cut-mid-body':
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
      setTimeout(() => s.resetAndDestroy(), 50);
      return;
    case '/endless': {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n');
      const tick = setInterval(() => {
        if (s.destroyed) clearInterval(tick);
        else s.write(Buffer.alloc(4096, 0x61));
      }, 5);
      s.once('close', () => clearInterval(tick));
      return;
    }
    case '/hop':
      // The upstream hop's own fields, a challenge on a 200 included: none of them is the client's.
      s.write(
        'HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Up\r\nX-Up: upstream-secret\r\n' +
          'Proxy-Authenticate: Basic realm="up"\r\nKeep-Alive: timeout=5\r\nX-End: kept\r\nContent-Length: 2\r\n\r\nok',
      );
      return;
    case '/drip': {
      // A body a byte at a time, well inside the linger each, for several lingers in all; deaf to the
      // gateway's FIN until it is whole (a server streaming to a client that half-closed after asking).
      holding.add(s);
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${DRIP.length}\r\n\r\n`);
      let i = 0;
      const tick = setInterval(() => {
        if (s.destroyed) clearInterval(tick);
        else if (i < DRIP.length) s.write(DRIP[i++]!);
        else {
          clearInterval(tick);
          s.end();
        }
      }, DRIP_GAP_MS);
      s.once('close', () => clearInterval(tick));
      return;
    }
    case '/big': {
      // BIG bytes as fast as the gateway takes them, then the target's FIN.
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG}\r\n\r\n`);
      const chunk = Buffer.alloc(64 * 1024, 0x62);
      let sent = 0;
      const more = () => {
        while (sent < BIG && !s.destroyed) {
          sent += chunk.length;
          if (!s.write(chunk)) return void s.once('drain', more);
        }
        s.end();
      };
      more();
      return;
    }
    case '/fin-after':
      // Answers and closes its side (as a target asked for `Connection: close` does), reading on.
      s.end(ok('bye'));
      return;
    default:
      s.write(ok(path));
  }
}

describe('plain HTTP data path: misframed answers never reach another client', () => {
  let gw: GatewayProcess;
  let upstream: net.Server;
  /** Every request the upstream read, in order: request line (absolute-form URL or origin-form path). */
  const seen: string[] = [];
  /** The same requests' whole heads. */
  const heads: string[] = [];
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    upstream = net.createServer({ allowHalfOpen: true }, (s) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => {});
      // Closes once the gateway has ended its side, as a server reading to the end does (unless told
      // to hold on: a hostile target's connection ignores the FIN).
      s.on('end', () => {
        if (!holding.has(s)) s.end();
      });
      let buf = '';
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
          const head = buf.slice(0, end);
          const cl = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (buf.length < end + 4 + cl) return;
          buf = buf.slice(end + 4 + cl);
          const [method, target] = head.split(' ') as [string, string];
          seen.push(`${method} ${target}`);
          heads.push(head);
          if (method === 'CONNECT') {
            s.write('HTTP/1.1 200 Connection established\r\n\r\n');
            continue;
          }
          answer(s, new URL(target, 'http://target').pathname);
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    gw = await startOurs(LINGER_MS);
  });

  /** A gateway on this upstream: two proxies, one per route (absolute form, pinned). */
  const startOurs = (lingerMs: number) => {
    const port = (upstream.address() as AddressInfo).port;
    return startGateway(
      snapshotFile({
        upstreams: [`http://up:up-pass@127.0.0.1:${port}`, `http://up:up-pass@127.0.0.1:${port}`],
        routing: [
          { name: 'abs', match: { hosts: [ABS] }, selector: { pool: 'abs' }, policy: 'round-robin' },
          { name: 'pin', match: { hosts: [PIN] }, selector: { pool: 'pin' }, policy: 'round-robin' },
        ],
        attributes: (i) => ({ pool: ['abs', 'pin'][i]! }),
        filtersDestinations: (i) => i === 0,
      }),
      {
        GATEWAY_CLIENT_USERS: 'crawler:s3cret',
        GATEWAY_SSRF_ALLOW: `${ABS}:80,${PIN}:80`,
        GATEWAY_LINGER_MS: String(lingerMs),
        GATEWAY_UPSTREAM_KEEPALIVE_MS: '60000',
      },
    );
  };

  afterAll(async () => {
    await gw?.stop();
    for (const s of sockets) s.destroy();
    await new Promise((r) => upstream?.close(r));
  });

  const get = (host: string, path: string, method = 'GET', timeoutMs = 3_000) =>
    rawExchange(
      gw.proxyPort,
      `${method} http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
      { timeoutMs },
    );

  /** The next client on the pool gets its own answer, whole, and nothing of an earlier one. */
  async function victimIsClean(tag: string): Promise<void> {
    for (let i = 0; i < 3; i++) {
      const v = await get(ABS, `/victim-${tag}-${i}`);
      expect(v.text).not.toContain('EVIL');
      expect(v.text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(v.text.endsWith(`\r\n\r\n/victim-${tag}-${i}`)).toBe(true);
    }
  }

  const noLoad = async () => {
    const h = await pollUntil(gw.health, (x) => x.load.active + x.load.reserved === 0, 5_000, 'no load');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  };

  it.each([
    ['/cl-and-te', 'GET'],
    ['/204-with-body', 'GET'],
    ['/304-with-body', 'GET'],
    ['/head-with-body', 'HEAD'],
    ['/100-then-evil', 'GET'],
    ['/double-cl', 'GET'],
    ['/chunk-overflow', 'GET'],
  ])('pooled: %s (%s) leaves nothing for the next client', async (path, method) => {
    // A warm pooled connection first, so the misframed answer rides a reused one.
    await victimIsClean(`warm${path}`);
    const r = await get(ABS, path, method);
    expect(r.text).not.toContain('EVIL');
    await victimIsClean(path.slice(1));
    await noLoad();
  });

  it('pooled: a response without a length that is read to the close is never reused', async () => {
    await victimIsClean('warm-identity');
    const r = await get(ABS, '/te-chunked-identity');
    expect(r.closedBy).toBe('server');
    expect(r.text.endsWith(`\r\n\r\n0\r\n\r\n${EVIL}`)).toBe(true);
    await victimIsClean('te-identity');
    await noLoad();
  });

  it('pooled: an upstream cut mid-body cuts the client, and the next client is served', async () => {
    await victimIsClean('warm-cut');
    const r = await get(ABS, '/cut-mid-body');
    expect(r.closedBy).toBe('server');
    expect(r.text).toContain('partial');
    // No complete-looking answer: the 100-byte body stopped short.
    expect(Buffer.byteLength(r.text.slice(r.text.indexOf('\r\n\r\n') + 4), 'latin1')).toBeLessThan(100);
    await victimIsClean('cut');
    await noLoad();
  });

  it('pooled: a client that leaves mid-body takes the connection with it', async () => {
    await victimIsClean('warm-leave');
    const c = net.connect({ port: gw.proxyPort, host: '127.0.0.1' });
    c.on('error', () => {});
    c.write(`GET http://${ABS}/endless HTTP/1.1\r\nHost: ${ABS}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`);
    let got = 0;
    await new Promise<void>((resolve) =>
      c.on('data', (d: Buffer) => {
        got += d.length;
        if (got > 100_000) resolve();
      }),
    );
    c.destroy();
    await victimIsClean('leave');
    await noLoad();
  });

  it('pooled: a pipelined second request from the client never reaches the upstream', async () => {
    await victimIsClean('warm-pipe');
    const before = seen.length;
    const one = `GET http://${ABS}/first HTTP/1.1\r\nHost: ${ABS}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
    const two = `GET http://${ABS}/second HTTP/1.1\r\nHost: ${ABS}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
    const r = await rawExchange(gw.proxyPort, one + two);
    expect(r.text.endsWith('\r\n\r\n/first')).toBe(true);
    expect(r.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    await victimIsClean('pipe');
    expect(seen.slice(before).filter((x) => x.includes('/second'))).toEqual([]);
  });

  it.each([
    ['pooled', ABS],
    ['pinned', PIN],
  ])('%s: hop-by-hop fields and credentials stay on their hop, both ways', async (_, host) => {
    const before = heads.length;
    // The pinned target keeps its connection open after answering: the exchange ends on the answer.
    const r = await exchangeUntilAnswered(
      gw.proxyPort,
      `GET http://${host}/hop HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n` +
        'Connection: keep-alive, X-Secret\r\nX-Secret: client-secret\r\nKeep-Alive: 5\r\n' +
        'Proxy-Connection: keep-alive\r\nTE: trailers\r\nUpgrade: h2c\r\nX-Kept: yes\r\n\r\n',
    );
    expect(r.endedBy).not.toBe('timeout');
    expect(r.text.endsWith('\r\n\r\nok')).toBe(true);
    const request = heads.slice(before).find((h) => / (http:\/\/[^/]+)?\/hop /.test(h.split('\r\n')[0]!))!;
    expect(request).toContain('\r\nX-Kept: yes');
    expect(request).not.toContain(AUTH.slice('Basic '.length));
    expect(request).not.toMatch(/\r\n(x-secret|keep-alive|proxy-connection|te|upgrade):/i);
    expect(request).not.toMatch(/client-secret/);
    const upstreamAuth = `Proxy-Authorization: ${basicAuth('up', 'up-pass')}`;
    // Our credentials for the upstream: on the absolute-form request, never inside a pinned tunnel.
    if (host === ABS) expect(request).toContain(upstreamAuth);
    else expect(request).not.toMatch(/proxy-authorization/i);
    const head = r.text.slice(0, r.text.indexOf('\r\n\r\n'));
    expect(head).toContain('\r\nX-End: kept');
    expect(head).not.toMatch(/upstream-secret|proxy-authenticate|keep-alive|x-up/i);
    expect(head.endsWith('\r\nConnection: close')).toBe(true);
  });

  it('pinned: a target that closed after answering does not hold the session once the linger is over', async () => {
    await noLoad();
    const c = net.connect({ port: gw.proxyPort, host: '127.0.0.1', allowHalfOpen: true });
    c.on('error', () => {});
    let text = '';
    const ended = new Promise<void>((r) => c.once('end', r));
    c.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    c.write(`GET http://${PIN}/fin-after HTTP/1.1\r\nHost: ${PIN}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`);
    await ended;
    expect(text.endsWith('\r\n\r\nbye')).toBe(true);
    try {
      // The client keeps its own side open (a keep-alive client that did not read `Connection: close`):
      // the gateway's side is done, so it waits GATEWAY_LINGER_MS for it, not GATEWAY_IDLE_TIMEOUT_MS.
      const h = await pollUntil(
        gw.health,
        (x) => x.sockets.proxyClients === 0 && x.load.active === 0,
        LINGER_MS + 3_000,
        'the session released',
      );
      expect(h.load).toEqual({ active: 0, reserved: 0 });
    } finally {
      c.destroy();
    }
  });

  it.each([
    ['pooled', 'later', ABS],
    ['pinned', 'later', PIN],
    ['pooled', 'with the request', ABS],
    ['pinned', 'with the request', PIN],
  ])(
    '%s: a client whose FIN came %s does not leave the session to a target that never answers',
    async (_, when, host) => {
      await noLoad();
      const c = net.connect({ port: gw.proxyPort, host: '127.0.0.1', allowHalfOpen: true });
      c.on('error', () => {});
      const request = `GET http://${host}/never HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
      if (when === 'with the request') c.end(request);
      else {
        c.write(request);
        // The request is on its way (the slot is taken), then the client's own timeout: it closes.
        await pollUntil(gw.health, (x) => x.load.active === 1, 3_000, 'the request under way');
        c.end();
      }
      try {
        const h = await pollUntil(
          gw.health,
          (x) => x.sockets.proxyClients === 0 && x.load.active === 0,
          LINGER_MS + 3_000,
          'the session released',
        );
        expect(h.load).toEqual({ active: 0, reserved: 0 });
      } finally {
        c.destroy();
      }
    },
  );

  describe('with a linger of a second', () => {
    // Its own variable: a start that failed must not have the main gateway stopped in its place.
    let outer: GatewayProcess;
    let drip: GatewayProcess | undefined;
    beforeAll(async () => {
      outer = gw;
      drip = await startOurs(DRIP_LINGER_MS);
      gw = drip;
    });
    afterAll(async () => {
      gw = outer;
      await drip?.stop();
    });

    // The other side of the linger after a client's FIN: it is GATEWAY_LINGER_MS of silence, not of the
    // FIN's age, so a half-closed client still receiving its answer gets all of it, on every path, whether
    // its FIN came with the request or once the answer had begun.
    it.each([
      ['pooled', 'with the request', ABS],
      ['pinned', 'with the request', PIN],
      ['CONNECT', 'with the request', PIN],
      ['pooled', 'once the answer began', ABS],
      ['pinned', 'once the answer began', PIN],
      ['CONNECT', 'once the answer began', PIN],
    ])(
      '%s: a client whose FIN came %s gets a body that keeps moving past the linger',
      async (kind, when, host) => {
        await noLoad();
        const c =
          kind === 'CONNECT'
            ? await openTunnel(gw.proxyPort, `${host}:80`, AUTH)
            : net.connect({ port: gw.proxyPort, host: '127.0.0.1', allowHalfOpen: true });
        c.on('error', () => {});
        let text = '';
        const began = new Promise<void>((r) =>
          c.on('data', (d: Buffer) => {
            text += d.toString('latin1');
            if (text.endsWith(`\r\n\r\n${DRIP[0]}`)) r();
          }),
        );
        const closed = new Promise<void>((r) => c.once('close', () => r()));
        c.resume();
        const request =
          kind === 'CONNECT'
            ? `GET /drip HTTP/1.1\r\nHost: ${host}\r\n\r\n`
            : `GET http://${host}/drip HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
        if (when === 'with the request') c.end(request);
        else {
          c.write(request);
          await began;
          c.end();
        }
        await closed;
        expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        expect(text.endsWith(`\r\n\r\n${DRIP}`)).toBe(true);
      },
    );
  });

  // A linger that starts when our side is done (the target's FIN, the whole answer handed over) waits
  // for the tail of the answer still queued for a client reading slower than the target wrote: pinned,
  // that tail was cut off a linger after the target's FIN (the last few KiB of 8 MiB missing).
  it.each([
    ['pinned', PIN],
    ['pooled', ABS],
  ])(
    '%s: a slow reader gets the whole of a big answer the target finished long before',
    async (_, host) => {
      await noLoad();
      const c = net.connect({ port: gw.proxyPort, host: '127.0.0.1' });
      c.on('error', () => {});
      let head = '';
      let body = 0;
      c.on('data', (d: Buffer) => {
        if (!head.includes('\r\n\r\n')) {
          head += d.toString('latin1');
          const at = head.indexOf('\r\n\r\n');
          if (at >= 0) body += Buffer.byteLength(head.slice(at + 4), 'latin1');
        } else body += d.length;
        c.pause();
        // Some 2–3 MiB/s: slower than the target writes, so its FIN comes with the tail still queued.
        setTimeout(() => c.resume(), 20);
      });
      const ended = new Promise<void>((r) => c.once('close', () => r()));
      c.write(`GET http://${host}/big HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`);
      try {
        await ended;
        expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        expect(body).toBe(BIG);
      } finally {
        c.destroy();
      }
    },
    30_000,
  );

  it.each([
    ['pinned', '/hold', PIN, '\r\n\r\nheld'],
    ['pinned', '/stall-mid-body', PIN, 'stalled'],
    ['pooled', '/stall-mid-body', ABS, 'stalled'],
    ['CONNECT', '/hold', PIN, '\r\n\r\nheld'],
  ])(
    '%s: a client that closed after %s does not leave the session to a silent target',
    async (kind, path, host, last) => {
      await noLoad();
      // Through a CONNECT tunnel, the same request in origin form (the upstream plays the target).
      const c =
        kind === 'CONNECT'
          ? await openTunnel(gw.proxyPort, `${host}:80`, AUTH)
          : net.connect({ port: gw.proxyPort, host: '127.0.0.1' });
      c.on('error', () => {});
      let text = '';
      const got = new Promise<void>((r) =>
        c.on('data', (d: Buffer) => {
          text += d.toString('latin1');
          if (text.endsWith(last)) r();
        }),
      );
      c.resume(); // openTunnel hands its socket over paused
      c.write(
        kind === 'CONNECT'
          ? `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`
          : `GET http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
      );
      await got;
      // Done with it (a whole answer read, or a client timeout), the client closes its connection; the
      // target stays silent and never closes its own. Without a byte either way, only the client's FIN
      // says the exchange is over: it gets the linger, not GATEWAY_IDLE_TIMEOUT_MS (5 minutes).
      c.end();
      try {
        const h = await pollUntil(
          gw.health,
          (x) => x.sockets.proxyClients === 0 && x.load.active === 0,
          LINGER_MS + 3_000,
          'the session released',
        );
        expect(h.load).toEqual({ active: 0, reserved: 0 });
      } finally {
        c.destroy();
      }
    },
  );
});
