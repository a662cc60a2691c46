// A worker shutting down holds its proxies under the same grant as any other (staleness.ts): its drain
// must not run a request on past the snapshot's validUntil, when the controller may hand the proxy to
// another worker. The grant is ended by the gateway's ticker, which therefore runs on through the drain.
import { describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../../shared/src/domain/gateway/canonical.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { staticSnapshotSource } from '../../../test/support/standalone-gateway.js';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';

const iso = (ms: number) => new Date(ms).toISOString();

function snapshotValidFor(validMs: number) {
  const now = Date.now();
  return buildSnapshot(
    {
      schemaVersion: 1,
      version: 1,
      ownershipEpoch: 1,
      workerId: 'w1',
      generatedAt: iso(now),
      validUntil: iso(now + validMs),
      routing: [{ name: 'all', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' }],
      proxies: [
        {
          name: 'a',
          host: '127.0.0.1',
          port: 3128,
          protocol: 'http',
          capacity: 5,
          expiresAt: iso(now + validMs),
          usableUntil: iso(now + validMs - 100),
          attributes: {},
        },
      ],
    },
    sha256Hex,
  );
}

describe('a gateway shutting down with a request in flight', () => {
  it('ends its grant at validUntil during the drain, as when it is not shutting down', async () => {
    const cfg = loadGatewayConfig([], {
      GATEWAY_CLIENT_USERS: 'u:p',
      HOST: '127.0.0.1',
      PORT: '0',
      GATEWAY_PROXY_PORT: '0',
      GATEWAY_DRAIN_TIMEOUT_MS: '10000',
      GATEWAY_WORKER_ID: 'w1',
    });
    // 3 s: start-up and the pick come first, and a loaded worker's stall of a second left no usable proxy.
    const source = staticSnapshotSource(snapshotValidFor(3_000));
    const gw = (await startGateway(cfg, { log: jsonLogger('error', () => {}), version: 't', source }))!;
    const picked = gw.worker.pick('example.com', Date.now(), {
      stickyValue: () => undefined,
      stickyOwner: () => '',
    });
    if (picked.kind !== 'ok') throw new Error(`no pick: ${picked.kind}`);
    picked.upstream.live.active++; // a request on proxy a, which the drain waits for
    const validUntil = Date.parse(gw.worker.snapshot()!.source.validUntil);
    const shut = gw.shutdown();
    expect(gw.worker.grantOver).toBe(false);
    // Polled for at most 6 s: the drain lasts 10, so a grant ended only at the drain's end is caught.
    await expect.poll(() => gw.worker.grantOver, { timeout: 6_000, interval: 50 }).toBe(true);
    expect(Date.now()).toBeGreaterThanOrEqual(validUntil);
    picked.upstream.live.active--;
    await shut;
  }, 15_000);
});
