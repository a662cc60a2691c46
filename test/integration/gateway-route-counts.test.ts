// A route deleted from the routing takes its request counts with it: the gateway forgot nothing, so every
// route ever served kept its gateway_requests_total series (and its map entries) for the life of the
// process. A standalone gateway whose snapshot file loses a route on reload (docs/gateway.md § Metrics).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { type GatewayHandle, startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import type { GatewayRoute } from '../../shared/src/messages/gateway-snapshot.js';
import { tempDir } from '../support/temp-dirs.js';

const file = join(tempDir('gw-route-counts-'), 'snapshot.json');
const KEEP: GatewayRoute = {
  name: 'keep',
  match: { hosts: ['127.0.0.2'] },
  selector: {},
  policy: 'round-robin',
};
// Selects nothing: every request to it is a 503 no_upstream counted under the route.
const GONE: GatewayRoute = {
  name: 'gone',
  match: { hosts: ['127.0.0.3'] },
  selector: { pool: 'none' },
  policy: 'round-robin',
};
const write = (routing: GatewayRoute[], version: number) =>
  writeFileSync(file, JSON.stringify(snapshotFile({ upstreams: ['http://127.0.0.1:9'], routing, version })));
let gw: GatewayHandle | null = null;

afterAll(async () => {
  await gw?.shutdown();
});

describe('request counts by route', () => {
  it('a route gone from the routing loses its gateway_requests_total series at the swap', async () => {
    write([KEEP, GONE], 1);
    const cfg = loadGatewayConfig(['--snapshot', file], {
      PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_PROXY_PORT: 'off',
      GATEWAY_CLIENT_AUTH: 'none',
      GATEWAY_SSRF_ALLOW: '127.0.0.3:80',
      LOG_LEVEL: 'error',
    });
    gw = await startGateway(cfg, { log: jsonLogger('error', () => {}), version: 't' });
    const base = `http://127.0.0.1:${gw.httpPort}`;
    const r = await fetch(`${base}/v1/fetch`, {
      method: 'POST',
      body: JSON.stringify({ url: 'http://127.0.0.3/' }),
    });
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ error: 'no_upstream' });
    const routes = async () =>
      [
        ...(await (await fetch(`${base}/metrics`)).text()).matchAll(
          /^gateway_requests_total\{[^}]*route="([^"]*)"/gm,
        ),
      ].map((m) => m[1]);
    expect(await routes()).toEqual(['gone']);
    write([KEEP], 2);
    await gw.reload();
    expect(gw.worker.snapshot()!.version).toBe(2);
    expect(await routes()).toEqual([]);
  });
});
