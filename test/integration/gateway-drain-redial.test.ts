// A SIGTERM drain serves the requests it admitted (docs/gateway.md § Staleness and drain), and a refused
// dial goes to another proxy (§ Proxy listener): the two together, the same on both listeners. A request
// admitted before the shutdown, whose look-up comes back during the drain on a snapshot still within its
// age and grant, picks a proxy that refuses the dial: it is redialled, on the proxy listener and on
// /v1/fetch alike. Before, /v1/fetch never redialled once the worker stopped taking traffic (502
// upstream_dial_failed) while the proxy listener did. A gateway in process, a slow resolver holding the
// requests in their look-up, a port nobody listens on and a scripted upstream that answers.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, postFetch, rawExchange } from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import { DEAD_PORT } from '../support/dead-port.js';
import { pollUntil } from '../support/poll.js';
import { BODY, scriptedUpstream } from '../support/scripted-proxy.js';
import { tempDir } from '../support/temp-dirs.js';

/** One route per listener, its dead proxy first (round-robin's first pick), then the live one. */
const PROXY_HOST = 'px.slow.test';
const FETCH_HOST = 'fx.slow.test';

describe('a drain redials what it admitted', () => {
  const live = scriptedUpstream();
  let file: string;

  beforeAll(async () => {
    const livePort = await live.listen();
    const deadPort = DEAD_PORT;
    const at = (p: number) => `http://up:up-pass@127.0.0.1:${p}`;
    file = join(tempDir('gw-drain-redial-'), 'snapshot.json');
    writeFileSync(
      file,
      JSON.stringify(
        snapshotFile({
          upstreams: [at(deadPort), at(livePort), at(deadPort), at(livePort)],
          attributes: (i) => ({ pool: i < 2 ? 'proxy' : 'fetch' }),
          filtersDestinations: () => true,
          routing: [
            {
              name: 'proxy',
              match: { hosts: [PROXY_HOST] },
              selector: { pool: 'proxy' },
              policy: 'round-robin',
            },
            {
              name: 'fetch',
              match: { hosts: [FETCH_HOST] },
              selector: { pool: 'fetch' },
              policy: 'round-robin',
            },
          ],
        }),
      ),
    );
  });

  afterAll(async () => {
    await live.close();
  });

  it('on both listeners, on a snapshot still within its age and grant', async () => {
    const cfg = loadGatewayConfig(['--snapshot', file], {
      PORT: '0',
      GATEWAY_PROXY_PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_CLIENT_AUTH: 'none',
      LOG_LEVEL: 'error',
      GATEWAY_SSRF_ALLOW: `${PROXY_HOST}:80,${FETCH_HOST}:80`,
      // Longer than the look-up (3 s) by more than a loaded runner's stall: the drain must outlast it.
      GATEWAY_DRAIN_TIMEOUT_MS: '10000',
    });
    const gw = await startGateway(cfg, {
      log: jsonLogger('error', () => {}),
      version: 't',
      reporter: { start: () => {}, stop: async () => {} },
      // Uncached names, answered late: both requests are admitted and waiting when the shutdown begins.
      // 3 s, so that both are still in their look-up when the wait below sees them there: at 800 ms (and a
      // 700 ms wait) an event-loop stall of a loaded runner let the first look-up end before the second began.
      resolve: () => new Promise<string[]>((r) => setTimeout(() => r(['127.0.0.1']), 3_000)),
    });
    const viaProxy = rawExchange(
      gw.proxyPort!,
      `GET http://${PROXY_HOST}/cl HTTP/1.1\r\nHost: ${PROXY_HOST}\r\nConnection: close\r\n\r\n`,
      { timeoutMs: 15_000 },
    );
    const viaFetch = postFetch(
      gw.httpPort,
      { url: `http://${FETCH_HOST}/cl` },
      basicAuth('any', 'one'),
      15_000,
    );
    await pollUntil(
      async () => gw.worker.checking,
      (n) => n === 2,
      2_500,
      'both requests in their look-up',
    );
    const shut = gw.shutdown();
    const [p, f] = await Promise.all([viaProxy, viaFetch]);
    await shut;
    expect(p.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(Buffer.from(p.text.slice(p.text.indexOf('\r\n\r\n') + 4), 'latin1').equals(BODY)).toBe(true);
    expect(f.status, f.body).toBe(200);
    expect(Buffer.from(f.body, 'latin1').equals(BODY)).toBe(true);
    // The refused dials reported for each route's dead proxy, the answers for its live one.
    const seen = gw.worker
      .takeOutcomes(100)
      .map(({ proxy, route, stage, ok }) => `${route} ${proxy} ${stage} ${ok}`)
      .sort();
    expect(seen).toEqual([
      'fetch p-2-0 DIAL false',
      'fetch p-3-0 RESPONSE_HEADERS true',
      'proxy p-0-0 DIAL false',
      'proxy p-1-0 RESPONSE_HEADERS true',
    ]);
  });
});
