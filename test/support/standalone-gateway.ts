// A gateway as gateway.ts composes it, fed one snapshot by a source that applies it at start and nothing
// more: the unit tests that read the composed gateway (its metrics, /healthz, its clocks) without a control
// plane or a snapshot file.

import { loadGatewayConfig } from '../../functions/gateway/src/config.js';
import { type GatewayHandle, startGateway } from '../../functions/gateway/src/gateway.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import type { SnapshotSource } from '../../functions/gateway/src/session.js';
import type { GatewaySnapshot } from '../../shared/src/messages/gateway-snapshot.js';

/** A source that applies `snapshot` when the gateway starts it. */
export function staticSnapshotSource(snapshot: GatewaySnapshot): SnapshotSource {
  return { start: async (sink) => void (await sink.applySnapshot(snapshot)), stop: async () => {} };
}

/**
 * startGateway over `snapshot`: HTTP listener on a free loopback port, no proxy listener, no drain wait,
 * one client `u:p`, errors-only logging discarded; `env` adds or overrides settings.
 */
export function startStandaloneGateway(
  snapshot: GatewaySnapshot,
  workerId: string,
  env: Record<string, string> = {},
): Promise<GatewayHandle> {
  const cfg = loadGatewayConfig([], {
    GATEWAY_CLIENT_USERS: 'u:p',
    HOST: '127.0.0.1',
    PORT: '0',
    GATEWAY_PROXY_PORT: 'off',
    GATEWAY_DRAIN_TIMEOUT_MS: '0',
    ...env,
  });
  return startGateway(cfg, {
    log: jsonLogger('error', () => {}),
    version: 't',
    source: staticSnapshotSource(snapshot),
    workerId,
  });
}
