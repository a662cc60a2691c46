// A plain-HTTP client that shuts its write side once its request is sent (HTTP/1.0 style, `nc -N`) is
// still waiting for the answer: its FIN must not cut the session while the answer is pending. It used to
// turn the idle bound into GATEWAY_LINGER_MS at once, so a target slower than the linger left the client
// a bare close with not one byte — no answer, no 504. Now, until the response head has gone to the client,
// the session waits under its usual bound (GATEWAY_IDLE_TIMEOUT_MS), relays the answer whole and then
// ends; once the answer has begun, the FIN bounds the silence by the linger as before (docs/gateway.md §
// Proxy listener; the linger's other cases are in gateway-datapath-probes.test.ts). On both plain-HTTP
// paths: absolute form over a pooled connection, and pinned (origin form through a CONNECT tunnel).
import net, { type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type GatewayProcess, startGateway } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { pollUntil } from '../support/poll.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Routed to the upstream in absolute form (pooled connections). */
const ABS = '127.0.0.5';
/** Routed to the same upstream, pinned (CONNECT to the checked address, origin form inside). */
const PIN = '127.0.0.7';
const LINGER_MS = 300;
/** The target's answer comes this long after the request: five lingers. */
const SLOW_MS = 5 * LINGER_MS;
const IDLE_MS = 4_000;
const BODY = 'the slow answer';

describe('plain HTTP: a client that half-closed after its request still gets the answer', () => {
  let gw: GatewayProcess;
  let upstream: net.Server;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    // Plays the forward proxy (absolute form) and, after granting a CONNECT, the target in the tunnel.
    // Never closes a connection itself: the session's own bounds are what end it.
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
          if (new URL(target, 'http://target').pathname !== '/slow') continue; // '/never': a tarpit
          const t = setTimeout(
            () => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`),
            SLOW_MS,
          );
          s.once('close', () => clearTimeout(t));
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    gw = await startGateway(
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
        GATEWAY_LINGER_MS: String(LINGER_MS),
        GATEWAY_IDLE_TIMEOUT_MS: String(IDLE_MS),
      },
    );
  });

  afterAll(async () => {
    await gw?.stop();
    for (const s of sockets) s.destroy();
    await new Promise((r) => upstream?.close(r));
  });

  const noLoad = () => pollUntil(gw.health, (x) => x.load.active + x.load.reserved === 0, 5_000, 'no load');

  /**
   * A client that sends `path`'s GET and half-closes (with the request, or once it is on its way); with
   * `cutBody`, a POST whose FIN comes three bytes into a ten-byte body.
   */
  async function halfClosed(host: string, path: string, when: string, cutBody = false) {
    const c = net.connect({ port: gw.proxyPort, host: '127.0.0.1', allowHalfOpen: true });
    c.on('error', () => {});
    let text = '';
    c.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    const t0 = performance.now();
    const closed = new Promise<number>((r) => c.once('close', () => r(performance.now() - t0)));
    const request = cutBody
      ? `POST http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\nContent-Length: 10\r\n\r\nabc`
      : `GET http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: ${AUTH}\r\n\r\n`;
    if (when === 'with the request') c.end(request);
    else {
      c.write(request);
      await pollUntil(gw.health, (x) => x.load.active === 1, 3_000, 'the request under way');
      c.end();
    }
    return { c, closed, text: () => text };
  }

  it.each([
    ['pooled', 'with the request', ABS],
    ['pinned', 'with the request', PIN],
    ['pooled', 'once the request was on its way', ABS],
    ['pinned', 'once the request was on its way', PIN],
  ])(
    '%s, FIN %s: an answer slower than the linger is relayed whole, then the connection ends',
    async (_, when, host) => {
      await noLoad();
      const { c, closed, text } = await halfClosed(host, '/slow', when);
      try {
        const ms = await closed;
        expect(text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        expect(text().endsWith(`\r\n\r\n${BODY}`)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(SLOW_MS - 100);
        // Ended once it was relayed (the target keeps its side open): the linger, not the idle bound.
        expect(ms).toBeLessThan(SLOW_MS + IDLE_MS);
        const h = await pollUntil(
          gw.health,
          (x) => x.sockets.proxyClients === 0 && x.load.active === 0,
          3_000,
          'the session released',
        );
        expect(h.load).toEqual({ active: 0, reserved: 0 });
      } finally {
        c.destroy();
      }
    },
  );

  // The usual bound still holds: a target that never answers is cut by the idle timeout, as for a
  // client that kept its side open (a client that gives up closes its socket: that ends it at once).
  it.each([
    ['pooled', 'with the request', ABS],
    ['pinned', 'with the request', PIN],
    ['pooled', 'once the request was on its way', ABS],
    ['pinned', 'once the request was on its way', PIN],
  ])(
    '%s, FIN %s: an answer that never comes is bounded by the idle timeout, not the linger',
    async (_, when, host) => {
      await noLoad();
      const { c, closed } = await halfClosed(host, '/never', when);
      try {
        const ms = await closed;
        expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 300);
        expect(ms).toBeLessThan(IDLE_MS + 2_000);
        const h = await pollUntil(
          gw.health,
          (x) => x.sockets.proxyClients === 0 && x.load.active === 0,
          3_000,
          'the session released',
        );
        expect(h.load).toEqual({ active: 0, reserved: 0 });
      } finally {
        c.destroy();
      }
    },
  );

  // A FIN three bytes into a ten-byte body: the request can never be whole, so there is no answer to wait
  // for — the linger from the FIN, as before, not the idle timeout.
  it.each([
    ['pooled', ABS],
    ['pinned', PIN],
  ])('%s: a FIN that cut the request body short still ends the session after the linger', async (_, host) => {
    await noLoad();
    const { c, closed } = await halfClosed(host, '/never', 'with the request', true);
    try {
      expect(await closed).toBeLessThan(LINGER_MS + 1_500);
    } finally {
      c.destroy();
    }
  });
});
