// The `gateway.traffic` line Terraform's gateway traffic alerts are built on (terraform/monitoring.tf: the
// gateway_traffic distributions read jsonPayload.requests, .outcomes.noUpstream, .outcomeQueueDrops and
// .suspectFallbacks by jsonPayload.workerId). The gateway as gateway.ts wires it, serving real requests
// through a real upstream proxy: each line carries what happened since the line before, never totals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createForwardProxy, type ForwardProxy } from '../../../emulators/forward-proxy/proxy.js';
import {
  connectViaProxy,
  type EchoTarget,
  requestViaProxy,
  startEchoTarget,
} from '../../../emulators/forward-proxy/testing.js';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { noOutcomes } from '../../../shared/src/domain/gateway/traffic.js';
import { type GatewaySnapshot, sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { missingContractFields } from '../../../shared/src/testing/log-contract.js';
import { staticSnapshotSource } from '../../../test/support/standalone-gateway.js';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';
import type { Reporter } from './session.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** One upstream, marked SUSPECT (so every pick of it is a fallback), and a route with no proxy at all. */
function snapshot(upstreamPort: number): GatewaySnapshot {
  const t = Date.now();
  return buildSnapshot(
    {
      schemaVersion: 1,
      version: 1,
      ownershipEpoch: 1,
      workerId: 'gw-traffic',
      generatedAt: iso(t),
      validUntil: iso(t + 600_000),
      routing: [
        {
          name: 'empty',
          match: { hosts: ['127.0.0.2'] },
          selector: { pool: 'none' },
          policy: 'least-active',
        },
        { name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' },
      ],
      proxies: [
        {
          name: 'up',
          host: '127.0.0.1',
          port: upstreamPort,
          protocol: 'http',
          capacity: 10,
          expiresAt: iso(t + 3_600_000),
          usableUntil: iso(t + 3_000_000),
          attributes: {},
          suspect: true,
        },
      ],
    },
    sha256Hex,
  );
}

/** Never drains the outcome queue, so that a queue of one drops the second sample for certain. */
const idleReporter: Reporter = { start: () => {}, stop: async () => {} };

type Line = Record<string, unknown> & { outcomes: Record<string, number> };
const sum = (lines: Line[], read: (l: Line) => number) => lines.reduce((s, l) => s + read(l), 0);

describe('the gateway.traffic line', () => {
  let target: EchoTarget;
  let upstream: ForwardProxy;
  let upstreamPort: number;

  beforeAll(async () => {
    target = await startEchoTarget();
    upstream = createForwardProxy();
    upstreamPort = (await upstream.listen()).port;
  });

  afterAll(async () => {
    await upstream?.close();
    await target?.close();
  });

  /**
   * The gateway as gateway.ts wires it, on the snapshot above, its lines collected at INFO (the highest
   * level Terraform's log_level allows: code-contract.test.ts); `env` on top of what every test here needs.
   */
  async function startTrafficGateway(env: Record<string, string>) {
    const cfg = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      HOST: '127.0.0.1',
      PORT: '0',
      GATEWAY_PROXY_PORT: '0',
      GATEWAY_DRAIN_TIMEOUT_MS: '0',
      ...env,
    });
    const given = snapshot(upstreamPort);
    const source = staticSnapshotSource(given);
    const lines: Line[] = [];
    const gw = await startGateway(cfg, {
      log: jsonLogger('info', (l) => lines.push(JSON.parse(l))),
      version: 't',
      source,
      reporter: idleReporter,
      workerId: 'gw-traffic',
    });
    return { gw, lines };
  }

  it('reports, every GATEWAY_TRAFFIC_LOG_SECONDS at INFO, the requests by class, drops and fallbacks since the line before', async () => {
    const { gw, lines } = await startTrafficGateway({
      GATEWAY_TRAFFIC_LOG_SECONDS: '1',
      GATEWAY_OUTCOME_QUEUE_SIZE: '1',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${target.port},127.0.0.2:9`,
    });
    const traffic = () => lines.filter((l) => l.event === 'gateway.traffic');
    try {
      const proxy = { host: '127.0.0.1', port: gw.proxyPort! };
      const auth = { user: 'u', pass: 'p' };
      // Two through the upstream (the second's outcome sample finds the queue of one full), one refused
      // for want of credentials, one for a route with no proxy on this worker.
      expect((await requestViaProxy(proxy, `${target.url}/a`, { auth })).status).toBe(200);
      expect((await requestViaProxy(proxy, `${target.url}/b`, { auth })).status).toBe(200);
      expect((await requestViaProxy(proxy, `${target.url}/c`)).status).toBe(407);
      const none = await requestViaProxy(proxy, 'http://127.0.0.2:9/', { auth });
      expect([none.status, none.headers['x-proxyplane-error']]).toEqual([503, 'no_upstream']);

      // Until a line came after the last of them was counted: the one that must say nothing happened.
      const deadline = Date.now() + 8_000;
      const countedAt = () =>
        traffic().findIndex((_, i, all) => sum(all.slice(0, i + 1), (l) => l.requests as number) >= 4);
      while ((countedAt() < 0 || traffic().length <= countedAt() + 1) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      await gw.shutdown();
    }
    const all = traffic();
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const l of all) {
      expect(l).toMatchObject({ severity: 'INFO', workerId: 'gw-traffic' });
      // Every field a metric reads, and the whole fixed set of classes.
      expect(missingContractFields(l)).toEqual([]);
      expect(Object.keys(l.outcomes).sort()).toEqual(Object.keys(noOutcomes()).sort());
    }
    // Each periodic line covers a period; the shutdown's last one may come right after one of them.
    for (const l of all.slice(0, -1)) expect(l.periodSeconds as number).toBeGreaterThan(0);
    expect(all.at(-1)!.periodSeconds as number).toBeGreaterThanOrEqual(0);
    // Over the lines, each request counted once, in its class.
    expect(sum(all, (l) => l.requests as number)).toBe(4);
    const byClass = Object.fromEntries(
      Object.keys(noOutcomes()).map((c) => [c, sum(all, (l) => l.outcomes[c]!)]),
    );
    expect(byClass).toEqual({ ...noOutcomes(), ok: 2, authRequired: 1, noUpstream: 1 });
    expect(sum(all, (l) => l.outcomeQueueDrops as number)).toBe(1);
    expect(sum(all, (l) => l.suspectFallbacks as number)).toBe(2);
    expect(all.flatMap((l) => Object.entries(l.noUpstreamRoutes as Record<string, number>))).toEqual([
      ['empty', 1],
    ]);
    // Deltas, not totals: the line after the last request counted reports zeros.
    const last = all.at(-1)!;
    expect([last.requests, last.outcomeQueueDrops, last.suspectFallbacks]).toEqual([0, 0, 0]);
    expect(last.outcomes).toEqual(noOutcomes());
    expect(last.activeTunnels).toBe(0);
  });

  // A worker stopped (a Cloud Run scale-in, a rollout, a crash-looping process) between two lines: what it
  // served since its last line - up to a whole period, all of it for a process that lives less than one -
  // must still reach the alerts, so shutdown logs a last line once the drain is over.
  it('logs what was served since the last line when the worker shuts down', async () => {
    const { gw, lines } = await startTrafficGateway({
      // No periodic line comes during the test: whatever is logged is the shutdown's.
      GATEWAY_TRAFFIC_LOG_SECONDS: '60',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${target.port},127.0.0.2:9`,
    });
    try {
      const proxy = { host: '127.0.0.1', port: gw.proxyPort! };
      const auth = { user: 'u', pass: 'p' };
      expect((await requestViaProxy(proxy, `${target.url}/a`, { auth })).status).toBe(200);
      const none = await requestViaProxy(proxy, 'http://127.0.0.2:9/', { auth });
      expect(none.headers['x-proxyplane-error']).toBe('no_upstream');
    } finally {
      await gw!.shutdown();
    }
    const all = lines.filter((l) => l.event === 'gateway.traffic');
    expect(all).toHaveLength(1);
    const last = all[0]!;
    expect(missingContractFields(last)).toEqual([]);
    expect(last).toMatchObject({
      severity: 'INFO',
      workerId: 'gw-traffic',
      requests: 2,
      suspectFallbacks: 1,
      noUpstreamRoutes: { empty: 1 },
    });
    expect(last.outcomes).toEqual({ ...noOutcomes(), ok: 1, noUpstream: 1 });
  });

  // What an operator reads in `requests` (docs/gateway.md § Metrics): a CONNECT tunnel is one request, counted
  // `ok` when it is established - on the line of that moment, while it is still open - and not again when it
  // closes; its outcome sample is what waits for the close.
  it('counts a CONNECT tunnel once, when it is established, not when it closes', async () => {
    const { gw, lines } = await startTrafficGateway({
      GATEWAY_TRAFFIC_LOG_SECONDS: '1',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${target.port}`,
    });
    const traffic = () => lines.filter((l) => l.event === 'gateway.traffic');
    const counted = () => traffic().find((l) => (l.requests as number) > 0);
    try {
      const proxy = { host: '127.0.0.1', port: gw!.proxyPort! };
      const tunnel = await connectViaProxy(proxy, `127.0.0.1:${target.port}`, {
        auth: { user: 'u', pass: 'p' },
      });
      expect(tunnel.status).toBe(200);
      const deadline = Date.now() + 5_000;
      while (!counted() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      tunnel.socket.destroy();
      // Two more lines after the close: the close adds nothing to `requests`.
      const seen = traffic().length;
      while (traffic().length < seen + 2 && Date.now() < deadline + 5_000)
        await new Promise((r) => setTimeout(r, 50));
    } finally {
      await gw!.shutdown();
    }
    expect(counted()).toMatchObject({ requests: 1, activeTunnels: 1 });
    expect(counted()!.outcomes).toEqual({ ...noOutcomes(), ok: 1 });
    expect(sum(traffic(), (l) => l.requests as number)).toBe(1);
  });
});
