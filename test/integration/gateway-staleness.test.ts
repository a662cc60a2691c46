// Staleness end to end: with a max stale age, a worker whose snapshot is not refreshed stops taking new
// traffic (503 snapshot_stale) and comes back when a new valid snapshot arrives (SIGHUP re-reads the file).
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type GatewayProcess,
  rawExchange,
  startGateway,
} from '../../bench/support/gateway-process.js';
import { snapshotFile } from '../../bench/support/snapshot-file.js';
import { startTargets, type Targets } from '../../bench/support/targets.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { pollUntil } from '../support/poll.js';

describe('gateway staleness', () => {
  let targets: Targets;
  let upstream: ForwardProxy;
  let upstreamUrl: string;
  let gw: GatewayProcess;
  let get: string;

  beforeAll(async () => {
    targets = await startTargets();
    upstream = createForwardProxy({ credentials: 'up:up-pass' });
    upstreamUrl = `http://up:up-pass@127.0.0.1:${(await upstream.listen()).port}`;
    gw = await startGateway(snapshotFile({ upstreams: [upstreamUrl], version: 1 }), {
      GATEWAY_CLIENT_USERS: 'crawler:s3cret',
      GATEWAY_SSRF_ALLOW: `127.0.0.1:${targets.httpPort}`,
      GATEWAY_MAX_STALE_AGE_SECONDS: '4',
    });
    get = `GET http://127.0.0.1:${targets.httpPort}/ HTTP/1.1\r\nProxy-Authorization: ${basicAuth('crawler', 's3cret')}\r\n\r\n`;
  });

  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await targets?.close();
  });

  /** Writes a new snapshot version, SIGHUPs the gateway and waits for it to serve that version, fresh. */
  const load = async (version: number) => {
    writeFileSync(gw.snapshotPath, JSON.stringify(snapshotFile({ upstreams: [upstreamUrl], version })));
    gw.child.kill('SIGHUP');
    return pollUntil(
      gw.health,
      (h) => h.phase === 'fresh' && h.snapshot?.version === version,
      10_000,
      `snapshot version ${version} applied`,
    );
  };

  it('serves while fresh, refuses once stale, and recovers on a new snapshot', async () => {
    // Freshly loaded right before the request: the 4 s age bound starts now, not at a start-up that a
    // loaded machine may have stretched.
    await load(2);
    expect((await rawExchange(gw.proxyPort, get)).text).toMatch(/^HTTP\/1\.1 200/);

    const stale = await pollUntil(gw.health, (h) => h.phase === 'stale', 30_000, 'the gateway to go stale');
    expect(stale.phase).toBe('stale');
    const refused = await rawExchange(gw.proxyPort, get);
    expect(refused.text).toMatch(/^HTTP\/1\.1 503/);
    expect(refused.text).toContain('X-Proxyplane-Error: snapshot_stale');
    const ready = await fetch(`http://127.0.0.1:${gw.httpPort}/readyz`);
    expect(ready.status).toBe(503);

    const fresh = await load(3);
    expect(fresh).toMatchObject({ phase: 'fresh', snapshot: { version: 3 } });
    expect((await rawExchange(gw.proxyPort, get)).text).toMatch(/^HTTP\/1\.1 200/);
  });
});
