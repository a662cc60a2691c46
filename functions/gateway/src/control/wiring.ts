// Controller mode's composition: the worker's identity (worker id, instance id, zone), its credential
// for the API, the HTTP client, the Pub/Sub streaming pull and the Secret Manager resolver. main.ts
// passes what this returns to startGateway as its source, reporter and resolver.
import { randomUUID } from 'node:crypto';
import { createPubSub } from '../../../../shared/src/adapters/pubsub/client.js';
import type { GatewayConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { HttpControlClient } from './client.js';
import { PubSubSnapshotFeed } from './pubsub-feed.js';
import { secretManagerCredentials } from './secret-credentials.js';
import { ControllerSession, type SessionFatalError } from './session.js';
import { GoogleIdTokenSource, noToken, staticToken, type TokenSource } from './token.js';

export interface ControllerMode {
  session: ControllerSession;
  resolver: ReturnType<typeof secretManagerCredentials>;
  workerId: string;
  close(): Promise<void>;
}

function tokenSource(cfg: GatewayConfig, log: Logger): TokenSource {
  if (cfg.GATEWAY_WORKER_TOKEN) return staticToken(cfg.GATEWAY_WORKER_TOKEN);
  if (cfg.GATEWAY_WORKER_AUTH === 'none') {
    log.warn('control-plane calls carry no credential (GATEWAY_WORKER_AUTH=none): local use only');
    return noToken;
  }
  return new GoogleIdTokenSource(cfg.CONTROL_PLANE_URL!);
}

export function controllerMode(
  cfg: GatewayConfig,
  log: Logger,
  onFatal: (err: SessionFatalError) => void,
): ControllerMode {
  const instanceId = randomUUID();
  const workerId = cfg.GATEWAY_WORKER_ID ?? `gw-${instanceId.replaceAll('-', '').slice(0, 12)}`;
  const pubsub = createPubSub(cfg.GOOGLE_CLOUD_PROJECT!, cfg.PUBSUB_EMULATOR_HOST);
  const session = new ControllerSession({
    client: new HttpControlClient({
      baseUrl: cfg.CONTROL_PLANE_URL!,
      token: tokenSource(cfg, log),
      timeoutMs: cfg.GATEWAY_CONTROL_TIMEOUT_MS,
    }),
    feed: new PubSubSnapshotFeed(pubsub, {
      onError: (err) =>
        log.warn('snapshot pull error', { error: err.message, code: (err as { code?: unknown }).code }),
    }),
    log,
    workerId,
    instanceId,
    zone: cfg.GATEWAY_ZONE ?? (cfg.REGION?.match(/^[a-z0-9][-a-z0-9]{0,62}$/) ? cfg.REGION : 'local'),
    onFatal,
    monotonicNow: () => performance.now(),
    settings: { startWaitMs: cfg.GATEWAY_START_WAIT_SECONDS * 1000 },
  });
  const resolver = secretManagerCredentials({
    projectId: cfg.GOOGLE_CLOUD_PROJECT!,
    emulatorHost: cfg.SECRET_MANAGER_EMULATOR_HOST,
  });
  return { session, resolver, workerId, close: () => pubsub.close() };
}
