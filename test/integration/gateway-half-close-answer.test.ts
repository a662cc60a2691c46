// A plain-HTTP client that shuts its write side once its request is sent (HTTP/1.0 style, `nc -N`) is
// still waiting for the answer — but from the gateway it looks exactly like a client that closed outright
// (a FIN either way: the proxy listener allows half-open sockets), so its FIN still bounds the wait by
// GATEWAY_LINGER_MS (a crawler giving up on a tarpit must not hold a proxy's slot for the idle timeout:
// gateway-datapath-probes.test.ts). What it gets when the target is slower than that is a 504
// upstream_timeout, not a bare close with not one byte; a target that answers within the linger is relayed
// whole. A client that kept its side open gets the same 504 at the idle timeout. On both plain-HTTP paths:
// absolute form over a pooled connection, and pinned (origin form through a CONNECT tunnel). That 504 is a
// failed RESPONSE_HEADERS outcome (contract seed §5), as on /v1/fetch; the half-closed client's is none: its
// linger is its own bound, no evidence against the proxy (a gateway in process, its worker read directly).
import net, { type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type GatewayProcess, startGateway } from '../../bench/support/gateway-process.js';
import type { GatewayHandle } from '../../functions/gateway/src/gateway.js';
import { pollUntil } from '../support/poll.js';
import { startTwoPathGateway, twoPathSnapshot, twoPathSnapshotContent } from '../support/two-path-gateway.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Routed to the upstream in absolute form (pooled connections). */
const ABS = '127.0.0.5';
/** Routed to the same upstream, pinned (CONNECT to the checked address, origin form inside). */
const PIN = '127.0.0.7';
// answer < linger < idle, each with room to spare on a loaded machine: the spawned gateway has
// LINGER_MS - QUICK_MS to dial, forward and relay '/quick' (800 ms was missed under load: a 504), and a
// linger's 504 has IDLE_MS - LINGER_MS to arrive before it could be taken for the idle timeout's.
const LINGER_MS = 3_000;
const IDLE_MS = 6_000;
/** '/quick' is answered this long after the request: within the linger. */
const QUICK_MS = 500;
const BODY = 'the answer';

describe('plain HTTP: an answer not begun in time is a 504, never a bare close', () => {
  let gw: GatewayProcess;
  /** The same gateway in process, for the outcomes its worker queued. */
  let inProcess: GatewayHandle;
  let upstream: net.Server;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    // Plays the forward proxy (absolute form) and, after granting a CONNECT, the target in the tunnel.
    // Never closes a connection itself: the session's own bounds are what end it. '/never': a tarpit.
    upstream = net.createServer({ allowHalfOpen: true }, (s) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => {});
      let buf = '';
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
          const [method, target] = buf.slice(0, end).split(' ') as [string, string];
          buf = buf.slice(end + 4);
          if (method === 'CONNECT') {
            s.write('HTTP/1.1 200 Connection established\r\n\r\n');
            continue;
          }
          if (new URL(target, 'http://target').pathname !== '/quick') continue;
          const t = setTimeout(
            () => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`),
            QUICK_MS,
          );
          s.once('close', () => clearTimeout(t));
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    gw = await startGateway(twoPathSnapshotContent(port, { absolute: ABS, pinned: PIN }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `${ABS}:80,${PIN}:80`,
      GATEWAY_LINGER_MS: String(LINGER_MS),
      GATEWAY_IDLE_TIMEOUT_MS: String(IDLE_MS),
    });
    const hosts = { absolute: ABS, pinned: PIN };
    inProcess = await startTwoPathGateway(twoPathSnapshot(port, hosts), hosts, {
      env: { GATEWAY_LINGER_MS: String(LINGER_MS), GATEWAY_IDLE_TIMEOUT_MS: String(IDLE_MS) },
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await inProcess?.shutdown();
    for (const s of sockets) s.destroy();
    await new Promise((r) => upstream?.close(r));
  });

  const noLoad = () => pollUntil(gw.health, (x) => x.load.active + x.load.reserved === 0, 5_000, 'no load');

  /**
   * A GET for `path`; the client half-closes with the request when `halfClose`, else keeps its side open.
   * `owing`: a POST instead, that sends 5 of the 10 body bytes it announces.
   */
  async function ask(host: string, path: string, halfClose: boolean, port = gw.proxyPort, owing = false) {
    const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    c.on('error', () => {});
    let text = '';
    c.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    const t0 = performance.now();
    const closed = new Promise<number>((r) => c.once('close', () => r(performance.now() - t0)));
    const request = owing
      ? `POST http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\nContent-Length: 10\r\n\r\nhalf!`
      : `GET http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
    if (halfClose) c.end(request);
    else c.write(request);
    // The client ends its side once it has the answer (a 504 asks it to close).
    c.once('end', () => c.end());
    return { c, closed, text: () => text };
  }

  const released = () =>
    pollUntil(
      gw.health,
      (x) => x.sockets.proxyClients === 0 && x.load.active === 0,
      3_000,
      'the session released',
    );

  it.each([
    ['pooled', ABS],
    ['pinned', PIN],
  ])('%s: a half-closed client whose target says nothing within the linger gets a 504', async (_, host) => {
    await noLoad();
    const { c, closed, text } = await ask(host, '/never', true);
    try {
      const ms = await closed;
      expect(text()).toMatch(/^HTTP\/1\.1 504 /);
      expect(text()).toMatch(/\r\nX-Proxyplane-Error: upstream_timeout\r\n/i);
      expect(ms).toBeGreaterThanOrEqual(LINGER_MS - 100);
      expect(ms).toBeLessThan(IDLE_MS);
      expect((await released()).load).toEqual({ active: 0, reserved: 0 });
    } finally {
      c.destroy();
    }
  });

  it.each([
    ['pooled', ABS],
    ['pinned', PIN],
  ])(
    '%s: a half-closed client whose target answers within the linger gets the answer whole',
    async (_, host) => {
      await noLoad();
      const { c, closed, text } = await ask(host, '/quick', true);
      try {
        await closed;
        expect(text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        expect(text().endsWith(`\r\n\r\n${BODY}`)).toBe(true);
        await released();
      } finally {
        c.destroy();
      }
    },
  );

  it.each([
    ['pooled', ABS],
    ['pinned', PIN],
  ])('%s: a client that kept its side open gets the 504 at the idle timeout', async (_, host) => {
    await noLoad();
    const { c, closed, text } = await ask(host, '/never', false);
    try {
      const ms = await closed;
      expect(text()).toMatch(/^HTTP\/1\.1 504 /);
      expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 100);
      await released();
    } finally {
      c.destroy();
    }
  });

  it.each([
    ['pooled', 'absolute', ABS],
    ['pinned', 'pinned', PIN],
  ])(
    '%s: the 504 of a client that kept its side open is one failed RESPONSE_HEADERS outcome; a half-closed one, or one owing its body, none',
    async (_, routeName, host) => {
      const w = inProcess.worker;
      w.takeOutcomes(1000);
      const open = await ask(host, '/never', false, inProcess.proxyPort!);
      const halfClosed = await ask(host, '/never', true, inProcess.proxyPort!);
      const owing = await ask(host, '/never', false, inProcess.proxyPort!, true);
      try {
        await Promise.all([open.closed, halfClosed.closed, owing.closed]);
        for (const x of [open, halfClosed, owing])
          expect(x.text()).toMatch(/\r\nX-Proxyplane-Error: upstream_timeout\r\n/i);
        expect(w.takeOutcomes(1000).map(({ route, stage, ok }) => ({ route, stage, ok }))).toEqual([
          { route: routeName, stage: 'RESPONSE_HEADERS', ok: false },
        ]);
      } finally {
        for (const x of [open, halfClosed, owing]) x.c.destroy();
      }
    },
  );
});
