// The TARGET tier on the worker side (contract §6, docs/gateway.md § Snapshot format): a snapshot entry's
// excludedRoutes leaves the proxy out of those routes only. A real gateway process in standalone mode,
// two real upstream proxies (A and B, each connecting to targets from its own loopback address, so a
// target can tell which upstream carried each request) and one target per route. A is excluded from r1:
// every request to r1's host goes through B, while r2's requests use both. A reload that moves the
// exclusion to B moves r1's traffic to A.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  eventually,
  type GatewayProcess,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';

const AUTH = basicAuth('crawler', 's3cret');
/** Where each upstream connects to targets from: the target's view of which upstream carried a request. */
const SOURCE = { A: '127.0.0.4', B: '127.0.0.5' } as const;
const HOST = { r1: '127.0.0.2', r2: '127.0.0.3' } as const;
const REQUESTS = 12;

interface Target {
  server: http.Server;
  port: number;
  /** The source address of every request the target answered. */
  seen: string[];
}

async function target(host: string): Promise<Target> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.socket.remoteAddress ?? '?');
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

/** How many of the requests each upstream carried. */
const byUpstream = (seen: readonly string[]) => ({
  A: seen.filter((a) => a === SOURCE.A).length,
  B: seen.filter((a) => a === SOURCE.B).length,
  other: seen.filter((a) => a !== SOURCE.A && a !== SOURCE.B).length,
});

describe('excludedRoutes: a proxy is left out of the routes its entry names, and only those', () => {
  const upstreams: Record<'A' | 'B', ForwardProxy> = {
    A: createForwardProxy({ credentials: 'up:up-pass', localAddress: SOURCE.A }),
    B: createForwardProxy({ credentials: 'up:up-pass', localAddress: SOURCE.B }),
  };
  let targets: Record<'r1' | 'r2', Target>;
  let gw: GatewayProcess;
  const file = (excluded: 'A' | 'B', version: number) =>
    snapshotFile({
      version,
      upstreams: [
        `http://up:up-pass@127.0.0.1:${upstreams.A.port}`,
        `http://up:up-pass@127.0.0.1:${upstreams.B.port}`,
      ],
      routing: [
        { name: 'r1', match: { hosts: [HOST.r1] }, selector: {}, policy: 'round-robin' },
        { name: 'r2', match: { hosts: [HOST.r2] }, selector: {}, policy: 'round-robin' },
      ],
      // Entry 0 is A, entry 1 is B.
      excludedRoutes: (i) => ((i === 0) === (excluded === 'A') ? ['r1'] : []),
    });
  /** Sends REQUESTS plain-HTTP GETs to the route's target; returns how many each upstream carried. */
  const send = async (route: 'r1' | 'r2') => {
    const t = targets[route];
    t.seen.length = 0;
    const authority = `${HOST[route]}:${t.port}`;
    for (let i = 0; i < REQUESTS; i++) {
      const r = await rawExchange(
        gw.proxyPort,
        `GET http://${authority}/ HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${AUTH}\r\nConnection: close\r\n\r\n`,
      );
      expect(r.text).toMatch(/^HTTP\/1\.1 200/);
    }
    return byUpstream(t.seen);
  };

  beforeAll(async () => {
    await upstreams.A.listen();
    await upstreams.B.listen();
    targets = { r1: await target(HOST.r1), r2: await target(HOST.r2) };
    gw = await startGateway(file('A', 1), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `${HOST.r1}:${targets.r1.port},${HOST.r2}:${targets.r2.port}`,
    });
  });

  afterAll(async () => {
    await gw?.stop();
    await Promise.allSettled([upstreams.A.close(), upstreams.B.close()]);
    for (const t of Object.values(targets ?? {})) await new Promise((r) => t.server.close(r));
  });

  it('the standalone snapshot file takes the field: both entries are served', async () => {
    expect((await gw.health()).snapshot).toMatchObject({ version: 1, proxies: 2 });
  });

  it('every request to the route A is excluded from goes through B', async () => {
    expect(await send('r1')).toEqual({ A: 0, B: REQUESTS, other: 0 });
  });

  it('the other route still uses both (A is excluded from r1 only)', async () => {
    expect(await send('r2')).toEqual({ A: REQUESTS / 2, B: REQUESTS / 2, other: 0 });
  });

  it('a new snapshot moving the exclusion to B (SIGHUP reload) moves r1 to A', async () => {
    writeFileSync(gw.snapshotPath, JSON.stringify(file('B', 2)));
    gw.child.kill('SIGHUP');
    const health = await eventually(
      () => gw.health(),
      (h) => h.snapshot?.version === 2,
      10_000,
    );
    expect(health.snapshot?.version).toBe(2);
    expect(await send('r1')).toEqual({ A: REQUESTS, B: 0, other: 0 });
    expect(await send('r2')).toEqual({ A: REQUESTS / 2, B: REQUESTS / 2, other: 0 });
  });
});
