// Entry point of the gateway worker: wiring only. Two modes:
//   controller: CONTROL_PLANE_URL set — registers with the API, pulls snapshots from its Pub/Sub
//               subscription, resolves upstream credentials in Secret Manager, reports back;
//   standalone: node functions/gateway/dist/…/main.js --snapshot snapshot.json (SIGHUP re-reads it).
// SIGTERM/SIGINT drain and exit, at any point of start-up too (process-shutdown.ts).
// First, for its side effect: the block it drops must be freed by the GCs of module loading, before
// any tunnel runs (malloc-thresholds.ts).
import './malloc-thresholds.js';
import { loadGatewayConfig } from './config.js';
import { type GatewayHandle, startGateway } from './gateway.js';
import { applyGcMarking } from './gc-marking.js';
import { gcThreads } from './gc-threads.js';
import { jsonLogger } from './logger.js';
import { ProcessShutdown } from './process-shutdown.js';

const bootLog = jsonLogger('info');
try {
  const cfg = loadGatewayConfig();
  const log = jsonLogger(cfg.LOG_LEVEL);
  // Before start-up goes on: a SIGTERM at any point of it (Cloud Run scaling in during the start wait)
  // ends the process cleanly, with the draining report if the worker registered. `on`, not `once`: a
  // second signal during shutdown is only logged, never the default action.
  const shutdown = new ProcessShutdown({ log, exit: (code) => process.exit(code) });
  let gw: GatewayHandle | null = null;
  process.on('SIGTERM', () => void shutdown.request('SIGTERM'));
  process.on('SIGINT', () => void shutdown.request('SIGINT'));
  process.on('SIGHUP', () => void gw?.reload());
  applyGcMarking(cfg.GATEWAY_GC_MARKING);
  // Loaded only in controller mode: the Pub/Sub and Secret Manager clients (gRPC, protobuf descriptors)
  // more than double the heap, and a standalone gateway has no use for them (docs/gateway.md § Performance).
  const controller = cfg.CONTROL_PLANE_URL
    ? (await import('./control/wiring.js')).controllerMode(
        cfg,
        log,
        (err) => void shutdown.request(`fatal: ${err.message}`, 1),
      )
    : null;
  if (controller) shutdown.onClose(() => controller.close());
  const starting = startGateway(cfg, {
    log,
    version: process.env.K_REVISION ?? 'local',
    stopping: shutdown.signal,
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
  shutdown.starting(starting);
  gw = await starting;
  // Null: stopped during start-up, and the shutdown under way finishes the process.
  if (gw)
    log.info('gateway listening', {
      proxyPort: gw.proxyPort,
      httpPort: gw.httpPort,
      host: cfg.HOST,
      mode: controller ? 'controller' : 'standalone',
      gcMarking: cfg.GATEWAY_GC_MARKING,
      gcThreads: gcThreads(),
      workerId: controller?.workerId,
    });
} catch (err) {
  bootLog.error('gateway failed to start', {
    error: err instanceof Error ? err.message : String(err),
    kind: (err as { kind?: string }).kind,
  });
  process.exit(1);
}
