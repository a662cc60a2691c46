// Entry point of the gateway worker: wiring only. Two modes:
//   controller: CONTROL_PLANE_URL set — registers with the API, pulls snapshots from its Pub/Sub
//               subscription, resolves upstream credentials in Secret Manager, reports back;
//   standalone: node functions/gateway/dist/…/main.js --snapshot snapshot.json (SIGHUP re-reads it).
// SIGTERM/SIGINT drain and exit.
// First, for its side effect: the block it drops must be freed by the GCs of module loading, before
// any tunnel runs (malloc-thresholds.ts).
import './malloc-thresholds.js';
import { loadGatewayConfig } from './config.js';
import { type GatewayHandle, startGateway } from './gateway.js';
import { applyGcMarking } from './gc-marking.js';
import { jsonLogger } from './logger.js';

const bootLog = jsonLogger('info');
try {
  const cfg = loadGatewayConfig();
  const log = jsonLogger(cfg.LOG_LEVEL);
  applyGcMarking(cfg.GATEWAY_GC_MARKING);
  let gw: GatewayHandle | null = null;
  let stopping = false;
  const stop = async (reason: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { reason });
    await gw?.shutdown();
    await controller?.close();
    log.info('stopped');
    process.exit(code);
  };
  // Loaded only in controller mode: the Pub/Sub and Secret Manager clients (gRPC, protobuf descriptors)
  // more than double the heap, and a standalone gateway has no use for them (docs/gateway.md § Performance).
  const controller = cfg.CONTROL_PLANE_URL
    ? (await import('./control/wiring.js')).controllerMode(
        cfg,
        log,
        (err) => void stop(`fatal: ${err.message}`, 1),
      )
    : null;
  gw = await startGateway(cfg, {
    log,
    version: process.env.K_REVISION ?? 'local',
    ...(controller
      ? {
          source: controller.session.source,
          reporter: controller.session.reporter,
          resolver: controller.resolver,
          workerId: controller.workerId,
          control: () => controller.session.status(),
        }
      : {}),
  });
  // Before the line that says we are up: whoever waits for it may signal at once, and a SIGHUP that
  // arrives before its handler ends the process (the default action).
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void gw?.reload());
  log.info('gateway listening', {
    proxyPort: gw.proxyPort,
    httpPort: gw.httpPort,
    host: cfg.HOST,
    mode: controller ? 'controller' : 'standalone',
    gcMarking: cfg.GATEWAY_GC_MARKING,
    workerId: controller?.workerId,
  });
} catch (err) {
  bootLog.error('gateway failed to start', {
    error: err instanceof Error ? err.message : String(err),
    kind: (err as { kind?: string }).kind,
  });
  process.exit(1);
}
