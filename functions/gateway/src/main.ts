// Entry point of the gateway worker: wiring only. Standalone mode:
//   node --import tsx functions/gateway/src/main.ts --snapshot snapshot.json
// SIGTERM/SIGINT drain and exit; SIGHUP re-reads the snapshot file.
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';
import { jsonLogger } from './logger.js';

const bootLog = jsonLogger('info');
try {
  const cfg = loadGatewayConfig();
  const log = jsonLogger(cfg.LOG_LEVEL);
  const gw = await startGateway(cfg, { log, version: process.env.K_REVISION ?? 'local' });
  log.info('gateway listening', { proxyPort: gw.proxyPort, httpPort: gw.httpPort, host: cfg.HOST });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    await gw.shutdown();
    log.info('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void gw.reload());
} catch (err) {
  bootLog.error('gateway failed to start', {
    error: err instanceof Error ? err.message : String(err),
    kind: (err as { kind?: string }).kind,
  });
  process.exit(1);
}
