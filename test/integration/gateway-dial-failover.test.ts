// A proxy that has just died (a VM preempted, a provider's endpoint gone) refuses connections until the
// passive signals and the probe take it out of the snapshot, about a minute. A refused dial sent the
// request nowhere, so the gateway gives it to another of the route's proxies (proxy-session.ts redial):
// a crawler sees no 502 while another proxy of the route is up. Standalone gateway over two upstreams of
// one route, one of them a port nobody listens on; every path that dials: a CONNECT tunnel, pinned plain
// HTTP (a tunnel per request), absolute-form plain HTTP over kept-alive connections.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  openTunnel,
  postFetch,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { DEAD_PORT } from '../support/dead-port.js';
import { pollUntil } from '../support/poll.js';

const AUTH = basicAuth('crawler', 's3cret');
const ROUNDS = 6;

describe('gateway: a refused dial goes to another proxy of the route', () => {
  let targets: Targets;
  let upstream: ForwardProxy;
  let deadPort: number;
  const gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    targets = await startTargets();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    const livePort = (await upstream.listen()).port;
    deadPort = DEAD_PORT;
    const start = (plainHttp: 'pinned' | 'auto') =>
      startGateway(
        snapshotFile({
          // The dead one first: round-robin and least-active both try it on the first request.
          upstreams: [`http://up:up-pass@127.0.0.1:${deadPort}`, `http://up:up-pass@127.0.0.1:${livePort}`],
          routing: [
            // `localhost`: a route of the dead proxy alone, where nothing is left to redial to.
            {
              name: 'solo',
              match: { hosts: ['localhost'] },
              selector: { pool: 'dead' },
              policy: 'round-robin',
            },
            { name: 'default', match: { hosts: ['*'] }, selector: {}, policy: 'round-robin' },
          ],
          attributes: (i) => ({ pool: i === 0 ? 'dead' : 'live' }),
          // auto over marked entries: plain HTTP in absolute form (the forward proxy takes it).
          filtersDestinations: () => plainHttp === 'auto',
        }),
        {
          GATEWAY_CLIENT_USERS: 'crawler:s3cret',
          GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort},localhost:${targets.httpPort}`,
          GATEWAY_PLAIN_HTTP: plainHttp,
          LOG_LEVEL: 'debug',
        },
      );
    gateways.push(await start('pinned'), await start('auto'));
  });

  afterAll(async () => {
    for (const gw of gateways) await gw.stop();
    await upstream?.close();
    await targets?.close();
  });

  const get = (gw: GatewayProcess, path: string) =>
    rawExchange(
      gw.proxyPort,
      `GET http://127.0.0.1:${targets.httpPort}${path} HTTP/1.1\r\nHost: 127.0.0.1:${targets.httpPort}\r\nProxy-Authorization: ${AUTH}\r\nConnection: close\r\n\r\n`,
    );

  it.each([
    ['pinned', 0],
    ['absolute-form', 1],
  ])('plain HTTP (%s): every request answered 200 while one of the two proxies refuses', async (_, g) => {
    const gw = gateways[g]!;
    for (let i = 0; i < ROUNDS; i++) {
      const r = await get(gw, `/failover-${i}`);
      expect(r.text, `request ${i}`).toMatch(/^HTTP\/1\.1 200 /);
    }
    const h = await gw.health();
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  });

  it('CONNECT: every tunnel opens while one of the two proxies refuses; no socket is left behind', async () => {
    const gw = gateways[0]!;
    for (let i = 0; i < ROUNDS; i++) {
      const tunnel = await openTunnel(gw.proxyPort, `127.0.0.1:${targets.httpPort}`, AUTH);
      tunnel.destroy();
    }
    // The detached sockets of the refused dials are counted out too (the tunnels' own close as they end).
    const h = await pollUntil(gw.health, (x) => x.sockets.upstreams === 0, 5_000, 'no upstream socket left');
    expect(h.sockets.upstreams).toBe(0);
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  });

  it.each([
    ['a tunnel per fetch', 0],
    ['absolute-form', 1],
  ])('POST /v1/fetch (%s): every fetch answered 200 while one of the two proxies refuses', async (_, g) => {
    const gw = gateways[g]!;
    for (let i = 0; i < ROUNDS; i++) {
      const r = await postFetch(
        gw.httpPort,
        { url: `http://127.0.0.1:${targets.httpPort}/fetch-${i}` },
        AUTH,
        5_000,
      );
      expect(r.status, `fetch ${i}: ${r.body}`).toBe(200);
    }
    const h = await pollUntil(gw.health, (x) => x.sockets.upstreams === 0, 5_000, 'no upstream socket left');
    expect(h.load).toEqual({ active: 0, reserved: 0 });
  });

  it('a request whose route has no other proxy still gets 502 upstream_dial_failed', async () => {
    const gw = gateways[0]!;
    const r = await rawExchange(
      gw.proxyPort,
      `CONNECT localhost:${targets.httpPort} HTTP/1.1\r\nHost: localhost\r\nProxy-Authorization: ${AUTH}\r\n\r\n`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
    expect(r.text).toContain('X-Proxyplane-Error: upstream_dial_failed');
  });

  it('the refused dials are still reported: DIAL failures in the outcomes, for the passive health', async () => {
    const gw = gateways[0]!;
    const dialFailures = () =>
      gw
        .logEntries()
        .filter((e) => e.message === 'outcomes')
        .reduce((n, e) => n + ((e.failedByStage as Record<string, number> | undefined)?.DIAL ?? 0), 0);
    // The reporter logs its tally every 5 s.
    const n = await pollUntil(
      async () => dialFailures(),
      (x) => x > 0,
      12_000,
      'DIAL failures in the outcomes',
    );
    expect(n).toBeGreaterThan(0);
    // And counted on /metrics by listener: the tests before redialled on both of this gateway's.
    const metrics = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`)).text();
    for (const listener of ['proxy', 'fetch']) {
      const line = metrics
        .split('\n')
        .find((l) => l.startsWith(`gateway_redials_total{listener="${listener}"} `));
      expect(Number(line?.split(' ')[1] ?? 0), listener).toBeGreaterThan(0);
    }
  });
});
