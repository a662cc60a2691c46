// Entry point of the Cloud Run service: config from the environment → adapters → server. Wiring only.
import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { AuthConfigError } from './auth/authenticator.js';
import { type ApiConfig, loadApiConfig } from './config.js';
import { startApiServer } from './server.js';
import { wireApi } from './wiring.js';

const boot = jsonLogger({ service: 'api' });

let config: ApiConfig;
try {
  config = loadApiConfig(process.env);
} catch (err) {
  const detail = err instanceof AuthConfigError ? err.message : String((err as Error).message ?? err);
  boot.error(`api refuses to start: ${detail}`, { kind: (err as { kind?: unknown }).kind ?? 'config' });
  process.exit(1);
}

// On Cloud Run its lines name the request's trace (Cloud Logging groups them); locally there is none to name.
const log = jsonLogger(
  { service: 'api' },
  { level: config.logLevel, traceProject: config.onCloudRun ? config.projectId : undefined },
);
for (const warning of config.auth.warnings) log.warn(warning, { auth: 'config' });
if (config.auth.mode === 'open') {
  // Loud on purpose: this line must be impossible to miss in a terminal or in Cloud Logging.
  log.warn(
    '!!! ADMIN AUTH IS OFF (local mode and no ADMIN_TOKENS / ADMIN_PRINCIPALS / ADMIN_EMAILS): anyone who can reach this port can create and delete proxies. Local use only. !!!',
    { auth: 'off' },
  );
}

const wired = wireApi(config, log);
const server = await startApiServer({ port: config.port, host: config.host, deps: wired.deps });
log.info(`api listening on ${server.url}`, { version: config.version, auth: wired.deps.auth.description });

/** How long a stopping API lets requests in flight finish before it drops them. */
const SHUTDOWN_GRACE_MS = 4_000;
/** How long its clients (Pub/Sub, Secret Manager, Scheduler) get to close after that: inside Cloud Run's 10 s. */
const CLOSE_BOUND_MS = 3_000;
let stopping = false;
const shutdown = async (signal: string) => {
  if (stopping) {
    log.info(`api already stopping (${signal})`);
    return;
  }
  stopping = true;
  log.info(`api stopping (${signal})`);
  let code = 0;
  try {
    // In-flight requests finish (a grant already committed reaches its crawler); Cloud Run allows 10 s
    // after SIGTERM, `npm start` 5 s.
    await server.shutdown(SHUTDOWN_GRACE_MS);
    process.on('unhandledRejection', onRejectionWhileClosing);
    await withDeadline(
      wired.close(),
      CLOSE_BOUND_MS,
      () => new Error(`clients not closed in ${CLOSE_BOUND_MS} ms`),
    );
  } catch (err) {
    log.error('api shutdown failed', { error: err instanceof Error ? err.message : String(err) });
    code = 1;
  }
  process.exit(code);
};
/**
 * The Firestore client retries a failed query or document read after a backoff (1 s, growing) — a
 * start-up read while the emulator is slow or absent, a read its request gave up on. One whose backoff
 * ends once close() has terminated the client is refused, and the client drops that refusal unhandled (its
 * requestStream does not await the run it starts; the read's caller never hears of it, its promise never
 * settles): Node exited 1 with the stack, mid-way through a clean stop. The refusal is this shutdown's own
 * doing: noted at debug, not an error. Anything else unhandled while closing ends the process with 1, in
 * one structured line. Listening only from the close on: before it, Node's default stands.
 */
function onRejectionWhileClosing(reason: unknown): void {
  if (reason instanceof Error && reason.message === FIRESTORE_TERMINATED) {
    log.debug('a Firestore call retried after its client was closed; dropped (shutdown)');
    return;
  }
  // With its stack: whatever this is, nothing else will say where it came from.
  log.error('api: unhandled rejection while closing', {
    error: reason instanceof Error ? reason.message : String(reason),
    stack: reason instanceof Error ? reason.stack?.slice(0, 4000) : undefined,
  });
  process.exit(1);
}
/** What the Firestore client refuses a call with once terminated (its pool's CLIENT_TERMINATED_ERROR_MSG). */
const FIRESTORE_TERMINATED = 'The client has already been terminated';

// `on`, not `once`: a second signal while stopping is only logged, never Node's default (an exit at once,
// the requests in flight and the clients' close cut short).
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
