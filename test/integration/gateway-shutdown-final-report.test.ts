// The last report of a shutdown whose drain hit its bound (GATEWAY_DRAIN_TIMEOUT_MS) says what is left
// after the gateway cut its remaining tunnels: nothing (docs/gateway.md § Controller session, Shutdown).
// The controller hands a shutting-down worker's proxies over at once only on a report with every count
// zero (shared/src/domain/workers/drain.ts shutDownIdle); a socket's close — where a tunnel gives its slot
// back — comes a turn of the event loop after destroy(), so a report read straight after the cut still
// counted the tunnels it had just ended, and the worker's proxies (every one of them, busy or not) waited
// for its grant to lapse, serving no one, after every scale-in that found a long CONNECT tunnel open.
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import type { Reporter, RuntimeView } from '../../functions/gateway/src/session.js';
import type { ProxyRuntimeCount } from '../../functions/gateway/src/worker.js';

let targets: Targets;
let upstream: ForwardProxy;
let file: string;

beforeAll(async () => {
  targets = await startTargets();
  upstream = createForwardProxy({ credentials: 'up:up-pass' });
  const { port } = await upstream.listen();
  file = join(mkdtempSync(join(tmpdir(), 'gw-final-')), 'snapshot.json');
  writeFileSync(file, JSON.stringify(snapshotFile({ upstreams: [`http://up:up-pass@127.0.0.1:${port}`] })));
});

afterAll(async () => {
  await upstream?.close();
  await targets?.close();
});

/** What the reporter's last report would carry: the counts read when Reporter.stop() is called. */
function finalCountsReporter(): Reporter & { final: ProxyRuntimeCount[] | null } {
  let view: RuntimeView | null = null;
  const r = {
    final: null as ProxyRuntimeCount[] | null,
    start: (v: RuntimeView) => {
      view = v;
    },
    stop: async () => {
      r.final = view!.runtimeCounts();
    },
  };
  return r;
}

/** A CONNECT tunnel through the gateway to the target, established and left open. */
async function openTunnel(port: number): Promise<net.Socket> {
  const c = net.connect(port, '127.0.0.1');
  c.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    let got = '';
    c.on('data', function onData(d) {
      got += d;
      if (!got.includes('\r\n\r\n')) return;
      c.off('data', onData);
      if (/^HTTP\/1\.1 200 /.test(got)) resolve();
      else reject(new Error(`CONNECT answered ${got.split('\r\n')[0]}`));
    });
    c.once('connect', () =>
      c.write(
        `CONNECT tunnel.test:${targets.httpPort} HTTP/1.1\r\nHost: tunnel.test:${targets.httpPort}\r\n\r\n`,
      ),
    );
  });
  return c;
}

describe('a shutdown whose drain hits its bound', () => {
  it('reports nothing in flight once it has cut the tunnels left', async () => {
    const reporter = finalCountsReporter();
    const gw = await startGateway(
      loadGatewayConfig(['--snapshot', file], {
        PORT: '0',
        GATEWAY_PROXY_PORT: '0',
        HOST: '127.0.0.1',
        GATEWAY_CLIENT_AUTH: 'none',
        GATEWAY_SSRF_ALLOW: `tunnel.test:${targets.httpPort}`,
        GATEWAY_DRAIN_TIMEOUT_MS: '300',
        LOG_LEVEL: 'error',
      }),
      {
        log: jsonLogger('error', () => {}),
        version: 't',
        resolve: async () => ['127.0.0.1'],
        reporter,
      },
    );
    const tunnel = await openTunnel(gw.proxyPort!);
    const closed = new Promise<void>((r) => tunnel.once('close', () => r()));
    expect(gw.worker.totals()).toEqual({ active: 1, reserved: 0 });

    await gw.shutdown();
    await closed; // the gateway cut it: the drain bound was reached
    expect(reporter.final).toEqual([]);
  });
});
