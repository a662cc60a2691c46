// The composition of one gateway process: worker, guard, listeners, timers and the drain on shutdown.
// main.ts calls it with the standalone pieces; the controller session will pass its own SnapshotSource,
// CredentialResolver (Secret Manager) and Reporter.
import { createServer } from 'node:http';
import { dnsResolve, type Resolve } from '../../../shared/src/adapters/dns-resolve.js';
import { listenOn } from '../../../shared/src/adapters/listen.js';
import { parseAllowList } from '../../../shared/src/domain/gateway/ssrf.js';
import { ClientAuth } from './client-auth.js';
import { answerClientError } from './client-error.js';
import type { CompiledSnapshot } from './compile.js';
import { type GatewayConfig, maxPreAuthPerSource } from './config.js';
import { CredentialCache, type CredentialResolver, StaticCredentialResolver } from './credentials.js';
import { FileSnapshotSource } from './file-source.js';
import { createHttpListener } from './http-app.js';
import { LocalReporter } from './local-reporter.js';
import type { Logger } from './logger.js';
import { PromRecorder } from './metrics.js';
import { PreAuthGate } from './pre-auth-gate.js';
import { createProxyListener } from './proxy-listener.js';
import type { Reporter, SnapshotSource } from './session.js';
import { newSocketCounts } from './sockets.js';
import { TargetGuard } from './target-guard.js';
import { startTrafficLog } from './traffic-log.js';
import { UpstreamPool } from './upstream-pool.js';
import { GatewayWorker } from './worker.js';

/**
 * How long before the drain's deadline what is still in flight is cut: a /v1/fetch gives its slot back on
 * its socket's close, a turn of the event loop after destroy() (a proxy-listener session at the cut
 * itself), and the last report must not count requests already cut (the shutdown's bound,
 * GATEWAY_DRAIN_TIMEOUT_MS, stays what it was).
 */
export const CUT_SETTLE_MS = 100;

/** http.Server's requestTimeout default: the whole request (head and body) within 5 minutes. */
const NODE_REQUEST_TIMEOUT_MS = 300_000;

/**
 * How often Node's HTTP server looks for heads past GATEWAY_HEADER_TIMEOUT_MS: a head is cut within this
 * much after its timeout. At most a second, and at most half the timeout, so a short one is not doubled.
 */
export function headerCheckIntervalMs(headerTimeoutMs: number): number {
  return Math.max(1, Math.min(1000, Math.floor(headerTimeoutMs / 2)));
}

export interface GatewayDeps {
  log: Logger;
  version: string;
  /** Defaults to the snapshot file of the config (standalone mode). */
  source?: SnapshotSource;
  /** Defaults to the snapshot file's `credentials` map. */
  resolver?: CredentialResolver;
  reporter?: Reporter;
  resolve?: Resolve;
  /** Controller mode's worker id (which may be generated); defaults to GATEWAY_WORKER_ID. */
  workerId?: string;
  /** Shown under `control` in /healthz. */
  control?: () => Record<string, unknown>;
  /**
   * Aborted when the process is told to stop (SIGTERM) while this is still starting: the snapshot source's
   * start wait ends at once, and, if no listener was bound yet, none is.
   */
  stopping?: AbortSignal;
}

export interface GatewayHandle {
  readonly worker: GatewayWorker;
  readonly proxyPort: number | null;
  readonly httpPort: number;
  reload(): Promise<void>;
  shutdown(): Promise<void>;
}

export class GatewayStartError extends Error {
  readonly kind = 'gateway_start';
}

/**
 * Starts the gateway; with `deps.stopping`, null when it aborted during the start wait: what was started is
 * stopped as shutdown() stops it (no listener was bound, so: the source and the reporter — in controller
 * mode the final draining report), and there is nothing left to shut down.
 */
export function startGateway(
  cfg: GatewayConfig,
  deps: GatewayDeps & { stopping: AbortSignal },
): Promise<GatewayHandle | null>;
export function startGateway(cfg: GatewayConfig, deps: GatewayDeps): Promise<GatewayHandle>;
export async function startGateway(cfg: GatewayConfig, deps: GatewayDeps): Promise<GatewayHandle | null> {
  const { log } = deps;
  const now = () => Date.now();
  // A snapshot's generatedAtMs is another machine's wall clock: only the wall clock compares with it, and
  // a host clock behind the controller's would read a negative age (gateway.snapshot_age and /metrics).
  const snapshotAgeMs = (s: { generatedAtMs: number }) => Math.max(0, now() - s.generatedAtMs);
  // The process's age, for gateway.snapshot_age while there is no snapshot: monotonic, as a wall clock
  // stepped back an hour held it at 0 for that hour (and the stale-gateway alert an hour late).
  const startedAtMonotonic = performance.now();
  const workerId = deps.workerId ?? cfg.GATEWAY_WORKER_ID;
  const { allow, invalid } = parseAllowList(cfg.GATEWAY_SSRF_ALLOW);
  if (invalid.length) throw new GatewayStartError(`GATEWAY_SSRF_ALLOW: cannot read ${invalid.join(', ')}`);
  if (cfg.GATEWAY_CLIENT_AUTH === 'none')
    log.warn('client authentication is OFF: anyone who reaches the gateway can use it');

  const staticCreds = new StaticCredentialResolver();
  const credentials = new CredentialCache(
    deps.resolver ?? staticCreds,
    cfg.GATEWAY_CREDENTIALS_TTL_SECONDS * 1000,
    () => performance.now(), // ages only: a wall clock stepped back would keep `latest` past its TTL
  );
  let fileSource: FileSnapshotSource | null = null;
  let source = deps.source;
  if (!source) {
    if (!cfg.snapshotFile)
      throw new GatewayStartError('no snapshot source: pass --snapshot FILE or GATEWAY_SNAPSHOT_FILE');
    fileSource = new FileSnapshotSource(cfg.snapshotFile, staticCreds, log, credentials);
    source = fileSource;
  }
  const sockets = newSocketCounts();
  const preAuth = new PreAuthGate(maxPreAuthPerSource(cfg));
  let metrics: PromRecorder | null = null;
  const worker = new GatewayWorker({
    credentials,
    log,
    now,
    monotonicNow: () => performance.now(),
    maxStaleAgeMs:
      cfg.GATEWAY_MAX_STALE_AGE_SECONDS > 0
        ? cfg.GATEWAY_MAX_STALE_AGE_SECONDS * 1000
        : Number.POSITIVE_INFINITY,
    proxyDrainTimeoutMs: cfg.GATEWAY_PROXY_DRAIN_TIMEOUT_MS,
    workerId,
    stickyTableSize: cfg.GATEWAY_STICKY_TABLE_SIZE,
    outcomeQueueSize: cfg.GATEWAY_OUTCOME_QUEUE_SIZE,
    plainHttp: cfg.GATEWAY_PLAIN_HTTP,
    onOutcomeDropped: () => metrics?.outcomeDropped(),
    onOutcomesExpired: (n) => metrics?.outcomesExpired(n),
    onSwapped: (s) => forgetRoutesGone(s),
  });
  metrics = new PromRecorder({
    activeTunnels: () => worker.totals().active,
    reserved: () => worker.totals().reserved,
    openSockets: () => ({ ...sockets }),
    snapshotAgeSeconds: () => {
      const s = worker.snapshot();
      return s ? snapshotAgeMs(s) / 1000 : null;
    },
    snapshotVersion: () => worker.snapshot()?.version ?? null,
    accepting: () => worker.accepting,
    outcomeQueueSize: () => worker.outcomes.size,
    suspectUpstreams: () => worker.snapshot()?.suspectUpstreams ?? null,
    suspectFallbacks: () => worker.suspectFallbacks,
    preAuthRefusals: () => preAuth.refused,
  });
  const recorder = metrics;
  // Request counts of routes the applied routing no longer has are forgotten (their /metrics series go;
  // the traffic line keeps their totals): on each swap, and on the minute sweep below for a request that
  // picked a route before the swap and was counted after it.
  function forgetRoutesGone(s: CompiledSnapshot | null) {
    if (s) metrics?.forgetRoutesBut(new Set(s.table.routes.map((r) => r.name)));
  }
  const auth = new ClientAuth(
    cfg.GATEWAY_CLIENT_USERS,
    cfg.GATEWAY_FETCH_TOKENS,
    cfg.GATEWAY_CLIENT_AUTH === 'required',
  );
  const resolve =
    deps.resolve ??
    dnsResolve({ servers: cfg.GATEWAY_DNS_SERVERS, timeoutMs: cfg.GATEWAY_DNS_TIMEOUT_MS, tries: 2 });
  // The DNS cache's own clock, monotonic: a wall clock stepped back would keep an answer past its TTL.
  const guard = new TargetGuard(allow, resolve, {
    ttlMs: cfg.GATEWAY_DNS_CACHE_SECONDS * 1000,
    maxEntries: 10_000,
  });

  const reporter = deps.reporter ?? new LocalReporter(log);
  // Each stop logged if it fails, never thrown: the reporter's last word (the draining report) and the drain
  // must not be skipped for the source's, nor the error that started a failed start-up replaced.
  const stopped = (what: string, stop: () => Promise<void>) =>
    stop().catch((e: unknown) => log.error(`${what} stop failed`, { error: String(e) }));
  // The reporter runs from before registration, not from the end of the start wait (up to 300 s): its
  // rounds are what keep the session alive (runtime reports, on the bound of the first snapshot's ACK) and
  // find out that it lapsed (the TTL probe, the pull's watchdogs). Started after the wait, a session given
  // nothing past its empty first snapshot (an empty share, the pass its ACK asked for lost) lapsed at its
  // TTL (30 s), a lapsed session gets no snapshot to end the wait, and the wait ran out into
  // session_expired. No listener is bound before the wait ends, so the counts it reports are all zero.
  reporter.start(worker);
  try {
    await source.start(worker, deps.stopping);
  } catch (err) {
    await stopped('reporter', () => reporter.stop());
    throw err;
  }
  if (deps.stopping?.aborted) {
    // Nothing was ever served: shutdown() without its listeners and its drain.
    worker.beginShutdown();
    await stopped('source', () => source.stop());
    await stopped('reporter', () => reporter.stop());
    return null;
  }
  const ticker = setInterval(() => worker.tick(), 1000);
  ticker.unref();
  // Counted by Terraform's stale-gateway alert (terraform/monitoring.tf): the age of the snapshot in
  // use, or of the process while it has none (a worker that never got one must alert too).
  const ageLog = setInterval(() => {
    const s = worker.snapshot();
    const ageMs = s ? snapshotAgeMs(s) : performance.now() - startedAtMonotonic;
    log.info('snapshot age', {
      event: 'gateway.snapshot_age',
      workerId: workerId ?? 'standalone',
      ageSeconds: Math.round(ageMs / 100) / 10,
      snapshotVersion: s?.version ?? null,
      phase: worker.phase(),
    });
  }, cfg.GATEWAY_SNAPSHOT_AGE_LOG_SECONDS * 1000);
  ageLog.unref();
  // Counted by Terraform's gateway traffic alerts (no_upstream share, outcome drops, SUSPECT fallbacks).
  const stopTrafficLog = startTrafficLog(
    log,
    {
      requestCounts: () => recorder.requestCounts(),
      outcomeQueueDrops: () => worker.outcomes.dropped,
      suspectFallbacks: () => worker.suspectFallbacks,
      activeTunnels: () => worker.totals().active,
    },
    {
      workerId: workerId ?? 'standalone',
      periodMs: cfg.GATEWAY_TRAFFIC_LOG_SECONDS * 1000,
      monotonicNow: () => performance.now(),
    },
  );

  // Kept-alive upstream connections for absolute-form plain HTTP, both listeners.
  const pool = new UpstreamPool(sockets, {
    idleMs: cfg.GATEWAY_UPSTREAM_KEEPALIVE_MS,
    maxIdlePerUpstream: cfg.GATEWAY_UPSTREAM_MAX_IDLE,
  });
  // Agents of upstreams that left the snapshot are forgotten once they hold no connection — here, not in
  // the proxy listener's sweep: on Cloud Run that listener is off and /v1/fetch alone fills the pool.
  const prune = setInterval(() => {
    pool.prune();
    forgetRoutesGone(worker.snapshot());
  }, 60_000);
  prune.unref();
  const proxy =
    cfg.GATEWAY_PROXY_PORT === 'off'
      ? null
      : createProxyListener(
          { worker, auth, guard, recorder, sockets, pool, preAuth },
          {
            maxHeaderBytes: cfg.GATEWAY_MAX_HEADER_BYTES,
            headerTimeoutMs: cfg.GATEWAY_HEADER_TIMEOUT_MS,
            upstreamTimeoutMs: cfg.GATEWAY_UPSTREAM_TIMEOUT_MS,
            idleTimeoutMs: cfg.GATEWAY_IDLE_TIMEOUT_MS,
            lingerMs: cfg.GATEWAY_LINGER_MS,
            maxConnections: cfg.GATEWAY_MAX_CONNECTIONS,
          },
          (err) => log.error('proxy listener error', { error: err.message }),
        );
  const listener = createHttpListener(
    {
      worker,
      guard,
      recorder,
      metrics,
      sockets,
      auth,
      log,
      upstreamTimeoutMs: cfg.GATEWAY_UPSTREAM_TIMEOUT_MS,
      pool,
      maxTimeoutMs: cfg.GATEWAY_FETCH_TIMEOUT_MS,
      maxBodyBytes: cfg.GATEWAY_FETCH_MAX_BODY_BYTES,
      maxResponseBytes: cfg.GATEWAY_FETCH_MAX_RESPONSE_BYTES,
      version: deps.version,
      control: deps.control,
    },
    cfg.HOST,
  );
  // The options @hono/node-server's serve() was given before /v1/fetch left the Hono app, and the
  // checking interval: Node enforces headersTimeout only when its own timer looks, every 30 s by default,
  // so a head that never ended was cut 10–40 s after it began (GATEWAY_HEADER_TIMEOUT_MS: 10 s).
  const http = createServer(
    {
      headersTimeout: cfg.GATEWAY_HEADER_TIMEOUT_MS,
      // Node's default (300 s) unless the header timeout is longer: createServer refuses a headersTimeout
      // above requestTimeout, and the gateway did not start.
      requestTimeout: Math.max(NODE_REQUEST_TIMEOUT_MS, cfg.GATEWAY_HEADER_TIMEOUT_MS),
      maxHeaderSize: cfg.GATEWAY_MAX_HEADER_BYTES,
      connectionsCheckingInterval: headerCheckIntervalMs(cfg.GATEWAY_HEADER_TIMEOUT_MS),
    },
    listener,
  );
  http.on('checkContinue', listener.checkContinue);
  // Node's 408, 431 and 400 before any handler, in the gateway's words (X-Proxyplane-Error, JSON).
  http.on('clientError', answerClientError);
  // The proxy listener's bound, on this listener too (closed at accept past it): unauthenticated clients
  // could otherwise hold any number of sockets here, out of the file descriptors both listeners and the
  // upstream connections share.
  http.maxConnections = cfg.GATEWAY_MAX_CONNECTIONS;
  http.on('connection', (s) => {
    sockets.httpClients++;
    s.once('close', () => sockets.httpClients--);
  });
  let proxyPort: number | null = null;
  let httpPort: number;
  try {
    if (proxy && cfg.GATEWAY_PROXY_PORT !== 'off')
      proxyPort = await proxy.listen(cfg.GATEWAY_PROXY_PORT, cfg.GATEWAY_PROXY_HOST ?? cfg.HOST);
    httpPort = await listenOn(http, cfg.PORT, cfg.HOST, (err) =>
      log.error('http listener error', { error: err.message }),
    );
  } catch (err) {
    // A port taken (EADDRINUSE) after the worker registered and was given proxies: stopped as shutdown()
    // stops, with nothing to drain — without the draining report its proxies stayed owned until its grant
    // lapsed (minutes), and a crash-looping worker with a generated id took more at every restart.
    worker.beginShutdown();
    for (const t of [ticker, ageLog, prune]) clearInterval(t);
    stopTrafficLog();
    await proxy?.stopAccepting();
    proxy?.destroyAll();
    http.close();
    pool.destroy();
    await stopped('source', () => source.stop());
    await stopped('reporter', () => reporter.stop());
    throw err;
  }

  return {
    worker,
    proxyPort,
    httpPort,
    reload: async () => fileSource?.reload(),
    shutdown: async () => {
      worker.beginShutdown();
      // The ticker runs on through the drain: it is what ends the grant (grantOver) at validUntil, and a
      // tunnel must not outlive the grant because its worker is shutting down (staleness.ts).
      clearInterval(ageLog);
      clearInterval(prune);
      await proxy?.stopAccepting();
      http.close();
      // Monotonic, as the gateway's waits are (a /v1/fetch's deadline aside: it meets the grant's end, a
      // wall-clock instant): a clock step must neither stretch the drain past the platform's grace period
      // nor cut it short.
      const deadline = performance.now() + cfg.GATEWAY_DRAIN_TIMEOUT_MS;
      const waitWhile = async (busy: () => boolean, until = deadline) => {
        while (busy() && performance.now() < until) await new Promise((r) => setTimeout(r, 50));
      };
      /** Requests on an upstream: active or reserved. */
      const onUpstreams = () => {
        const t = worker.totals();
        return t.active + t.reserved;
      };
      // Requests still waiting for the SSRF guard's look-up hold no proxy yet, so no report counts them;
      // the draining report (source.stop) must wait for them: a shutting-down worker reporting nothing in
      // flight has its proxies handed over at once (shared/src/domain/workers/drain.ts shutDownIdle).
      await waitWhile(() => worker.checking > 0);
      await stopped('source', () => source.stop());
      // In flight: on an upstream (active, reserved) or still waiting for a look-up.
      const cutAt = deadline - Math.min(CUT_SETTLE_MS, cfg.GATEWAY_DRAIN_TIMEOUT_MS);
      await waitWhile(() => onUpstreams() + worker.checking > 0, cutAt);
      const left = worker.totals();
      if (left.active + left.reserved > 0) log.warn('drain bound reached: closing what is left', left);
      proxy?.destroyAll();
      pool.destroy();
      if ('closeAllConnections' in http) http.closeAllConnections();
      // Until the deadline, for the cut sockets to close and give their slots back (a /v1/fetch's on its
      // socket's close): a last report still counting them is not "nothing in flight", and the worker's
      // proxies — all of them — would reach the others only once its grant lapsed (minutes), not at the
      // next pass (drain.ts shutDownIdle). At least CUT_SETTLE_MS after the cut: an event loop that woke
      // late for it (a long GC, a busy loop) ran the cut at or past the deadline, and the report read the
      // counts before a single close callback had run.
      await waitWhile(() => onUpstreams() > 0, Math.max(deadline, performance.now() + CUT_SETTLE_MS));
      clearInterval(ticker);
      // After the drain, so that the last line counts what it finished or refused; before the reporter's
      // last call, which may take what is left of the platform's grace period (Cloud Run: 10 s, then
      // SIGKILL). A tunnel cut just above was counted when it was established.
      stopTrafficLog();
      await stopped('reporter', () => reporter.stop());
    },
  };
}
