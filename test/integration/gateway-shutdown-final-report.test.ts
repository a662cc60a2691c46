import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import type { Reporter, RuntimeView } from '../../functions/gateway/src/session.js';
import type { ProxyRuntimeCount } from '../../functions/gateway/src/worker.js';
import { upstreamFixture } from '../support/gateway-upstream-fixture.js';

const fixture = upstreamFixture();

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
        `CONNECT tunnel.test:${fixture.targets.httpPort} HTTP/1.1\r\nHost: tunnel.test:${fixture.targets.httpPort}\r\n\r\n`,
      ),
    );
  });
  return c;
}

describe('a shutdown whose drain hits its bound', () => {
  it('reports nothing in flight once it has cut the tunnels left', async () => {
    const reporter = finalCountsReporter();
    const gw = await startGateway(
      fixture.config({
        GATEWAY_SSRF_ALLOW: `tunnel.test:${fixture.targets.httpPort}`,
        GATEWAY_DRAIN_TIMEOUT_MS: '300',
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
