// Absolute-form plain HTTP over a kept-alive upstream connection (docs/gateway.md § Proxy listener), where
// the upstream process has just died: the request goes out on its pooled connection, which the upstream
// drops unanswered, and the one retry's fresh dial is refused. Nothing reached any upstream, so the request
// goes to another proxy of the route, as any refused dial does — on both listeners. Before, the pooled
// connection had already counted as connected: the proxy listener answered 502 upstream_dial_failed
// without the redial, and /v1/fetch blamed the target (502 target_failed, a RESPONSE_HEADERS outcome).
// Also: a completed answer gives its upstream slot back while the client still holds its socket open.
// A gateway in process (its worker read directly), scripted upstreams on raw sockets.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, postFetch, rawExchange } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { type GatewayHandle, startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import type { Outcome } from '../../functions/gateway/src/outcomes.js';
import { pollUntil } from '../support/poll.js';
import { BODY, scriptedUpstream } from '../support/scripted-proxy.js';
import { tempDir } from '../support/temp-dirs.js';

/** The proxy listener's and /v1/fetch's: each dies under its own route. */
const LISTENERS = {
  proxy: { host: '127.0.0.5', prime: '127.0.0.7', dying: 'p-0-0', other: 'p-1-0' },
  fetch: { host: '127.0.0.6', prime: '127.0.0.8', dying: 'p-2-0', other: 'p-3-0' },
} as const;
/** A route of the live proxy alone. */
const LIVE = '127.0.0.9';

/** A route over the entries whose `pool` attribute is `pool`, round-robin from the first. */
const route = (name: string, host: string) => ({
  name,
  match: { hosts: [host] },
  selector: { pool: name },
  policy: 'round-robin' as const,
});

describe('a kept-alive upstream connection dropped by a proxy that has just died', () => {
  const dying = { proxy: scriptedUpstream(), fetch: scriptedUpstream() };
  const live = scriptedUpstream();
  let gw: GatewayHandle;
  /** Outcomes taken from the worker so far (no reporter drains them). */
  const outcomes: Outcome[] = [];

  beforeAll(async () => {
    const port = {
      proxy: await dying.proxy.listen(),
      fetch: await dying.fetch.listen(),
      live: await live.listen(),
    };
    const at = (p: number) => `http://up:up-pass@127.0.0.1:${p}`;
    const file = join(tempDir('gw-keepalive-redial-'), 'snapshot.json');
    writeFileSync(
      file,
      JSON.stringify(
        snapshotFile({
          // The dying proxy first on each route (round-robin's first pick); its own entry on a route of
          // its own (the same address and credentials: the same pooled connections) to leave one idle.
          upstreams: [
            at(port.proxy),
            at(port.live),
            at(port.fetch),
            at(port.live),
            at(port.proxy),
            at(port.fetch),
            at(port.live),
          ],
          attributes: (i) => ({
            pool: ['proxy', 'proxy', 'fetch', 'fetch', 'proxy-prime', 'fetch-prime', 'live'][i]!,
          }),
          filtersDestinations: () => true,
          routing: [
            route('proxy', LISTENERS.proxy.host),
            route('fetch', LISTENERS.fetch.host),
            route('proxy-prime', LISTENERS.proxy.prime),
            route('fetch-prime', LISTENERS.fetch.prime),
            route('live', LIVE),
          ],
        }),
      ),
    );
    const hosts = [LIVE, ...Object.values(LISTENERS).flatMap((l) => [l.host, l.prime])].map((h) => `${h}:80`);
    const cfg = loadGatewayConfig(['--snapshot', file], {
      PORT: '0',
      GATEWAY_PROXY_PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_CLIENT_AUTH: 'none',
      LOG_LEVEL: 'error',
      GATEWAY_SSRF_ALLOW: hosts.join(','),
      // Long: a client holding its socket open is still lingering when the slot is read.
      GATEWAY_LINGER_MS: '30000',
    });
    gw = await startGateway(cfg, {
      log: jsonLogger('error', () => {}),
      version: 't',
      reporter: { start: () => {}, stop: async () => {} },
    });
  });

  afterAll(async () => {
    await gw?.shutdown();
    for (const u of [dying.proxy, dying.fetch, live]) await u.close();
  });

  const take = () => {
    outcomes.push(...gw.worker.takeOutcomes(1000));
    return outcomes;
  };
  const get = (host: string, path: string) =>
    rawExchange(
      gw.proxyPort!,
      `GET http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
  const okOf = async (listener: keyof typeof LISTENERS, host: string, path: string) => {
    if (listener === 'proxy') {
      const r = await get(host, path);
      expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
      return Buffer.from(r.text.slice(r.text.indexOf('\r\n\r\n') + 4), 'latin1');
    }
    const r = await postFetch(gw.httpPort, { url: `http://${host}${path}` }, basicAuth('any', 'one'), 5_000);
    expect(r.status, r.body).toBe(200);
    return Buffer.from(r.body, 'latin1');
  };

  it.each(['proxy', 'fetch'] as const)(
    "%s: the request is answered through the route's other proxy, the dead one reported DIAL",
    async (listener) => {
      const l = LISTENERS[listener];
      const u = dying[listener];
      // One pooled connection to the dying proxy, answered and back in the pool.
      expect((await okOf(listener, l.prime, '/cl')).equals(BODY)).toBe(true);
      take();
      const before = { accepted: u.state.accepted, seen: u.state.seen.length };
      u.state.dropNextReused = true;
      u.state.dieOnDrop = true;
      expect((await okOf(listener, l.host, '/cl')).equals(BODY)).toBe(true);
      // It went out once on the pooled connection, which was dropped; the fresh dial found nothing.
      expect(u.state.dropNextReused).toBe(false);
      expect(u.state.seen.length).toBe(before.seen + 1);
      expect(u.state.accepted).toBe(before.accepted);
      const mine = take()
        .filter((o) => o.route === listener)
        .map(({ proxy, stage, ok }) => ({ proxy, stage, ok }));
      expect(mine).toEqual([
        { proxy: l.dying, stage: 'DIAL', ok: false },
        { proxy: l.other, stage: 'RESPONSE_HEADERS', ok: true },
      ]);
      const t = await pollUntil(
        async () => gw.worker.totals(),
        (x) => x.active + x.reserved === 0,
        5_000,
        'no slot held',
      );
      expect(t).toEqual({ active: 0, reserved: 0 });
    },
  );

  it('a completed answer gives its slot back while the client still holds its socket open', async () => {
    // Half-open: the gateway's FIN does not close the client's side.
    const c = net.connect({ port: gw.proxyPort!, host: '127.0.0.1', allowHalfOpen: true });
    let got = Buffer.alloc(0);
    c.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
    });
    let ended = false;
    c.on('end', () => {
      ended = true;
    });
    let closed = false;
    c.on('close', () => {
      closed = true;
    });
    c.on('error', () => {});
    try {
      c.write(`GET http://${LIVE}/cl HTTP/1.1\r\nHost: ${LIVE}\r\n\r\n`);
      await pollUntil(
        async () => ended,
        (x) => x,
        5_000,
        'the whole answer',
      );
      expect(got.toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
      const t = await pollUntil(
        async () => gw.worker.totals(),
        (x) => x.active === 0,
        1_500,
        'the slot given back',
      );
      expect(t).toEqual({ active: 0, reserved: 0 });
      // Still lingering (GATEWAY_LINGER_MS is 30 s): the slot went back with the answer, not the session.
      expect(closed).toBe(false);
    } finally {
      c.destroy();
    }
  });
});
