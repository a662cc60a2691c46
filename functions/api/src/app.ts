// The Hono service: admin API today; discovery, leases and worker endpoints mount beside it. Built from
// plain parameters (createApp(deps)) so that tests drive it with app.request() and fakes, and the
// end-to-end tests start it in-process (server.ts). Nothing here reads process.env.
import { randomUUID } from 'node:crypto';
import { OpenAPIHono } from '@hono/zod-openapi';
import { methodNotAllowed } from 'hono/method-not-allowed';
import { requestId } from 'hono/request-id';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { ManagedPortPolicy } from '../../../shared/src/domain/managed-ports.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import type { JobScheduler } from '../../../shared/src/ports/job-scheduler.js';
import type { ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import { proxyAdmin } from './admin/proxy-admin.js';
import type { Authenticator } from './auth/authenticator.js';
import { type EchoOptions, echoRoutes } from './echo/echo-routes.js';
import { ApiError } from './errors.js';
import type { FleetFeed } from './fleet/feed.js';
import { fleetApp } from './fleet/routes.js';
import { jobControls } from './jobs/job-controls.js';
import { jobRoutes } from './jobs/job-routes.js';
import { type LeaseApiDeps, leaseApi, leaseGuards, useLeaseGuards } from './leases/index.js';
import { type AuthFailureLimitOptions, authFailureLimit } from './middleware/auth-failure-limit.js';
import { limitBody } from './middleware/body-limit.js';
import { type CallerLimitOptions, callerRateLimit } from './middleware/caller-rate-limit.js';
import { recover } from './middleware/recover.js';
import { requestLog } from './middleware/request-log.js';
import { traceContext } from './middleware/trace-context.js';
import { healthRoute } from './routes/health.js';
import { documentRateLimitOn } from './routes/openapi-rate-limit.js';
import { adminSecurity, registerSecuritySchemes } from './routes/openapi-security.js';
import { proxyRoutes } from './routes/proxies.js';
import { validationHook } from './validation/hook.js';
import { type WorkersApiDeps, workersApi } from './workers/index.js';

export interface ApiDeps {
  /** Reported by /healthz and /openapi.json. */
  version: string;
  store: ProxyStore;
  publisher: ReconcilePublisher;
  clock: Clock;
  auth: Authenticator;
  log: Logger;
  /** The ports managed proxies may use (their firewall's, MANAGED_PROXY_PORTS); null or absent: any. */
  managedProxyPorts?: ManagedPortPolicy;
  newUid?: () => string;
  maxBodyBytes?: number;
  /** Mounts GET /v1/echo (unauthenticated: the EGRESS probe reaches it through arbitrary proxies). */
  echo?: EchoOptions;
  /** Discovery and leases for crawlers (docs/leases.md); absent = not served. */
  leases?: LeaseApiDeps;
  /** Mounts the gateway control plane: /v1/workers/* (worker identities) and /v1/gateway/* (admin). */
  workers?: WorkersApiDeps;
  /** Mounts the fleet page at /fleet (admin auth, read-only), rendered from this feed. */
  fleet?: FleetFeed;
  /**
   * Whether the fleet page takes its token as `?token=` (default true: the link `npm start` prints). False
   * where the platform logs whole request URLs (Cloud Run): there a token in the address is refused.
   */
  fleetTokenInUrl?: boolean;
  /** Mounts /v1/jobs (admin): the periodic jobs on Cloud Scheduler and their last runs (issue 11). */
  jobs?: { scheduler: JobScheduler | null; runs: Pick<JobRunStore, 'get' | 'list'> };
  /**
   * Per-caller rate limits on the crawler and admin routes (middleware/caller-rate-limit.ts; wiring.ts
   * always sets them, from config.ts); absent: none (unit tests of other things).
   */
  callerLimit?: CallerLimitOptions;
  /**
   * The per-address limit on failed authentication (middleware/auth-failure-limit.ts; wiring.ts always
   * sets it, from config.ts); absent: none (unit tests of other things).
   */
  authFailureLimit?: AuthFailureLimitOptions;
}

const HEARTBEAT = /^\/v1\/workers\/[^/]+\/(runtime|outcomes|ack)$/;

/**
 * The requests whose successes the request log keeps at DEBUG: the EGRESS probe's echo (twice a minute per
 * proxy) and each gateway worker's reports and ACKs (every few seconds). At INFO their lines were most of
 * the plane's Cloud Logging volume (docs/cost.md § Logging); the probe and the gateway log what they saw.
 */
export const routineRequest = (method: string, path: string): boolean =>
  (method === 'GET' && path === '/v1/echo') || (method === 'POST' && HEARTBEAT.test(path));

export function createApp(deps: ApiDeps) {
  const admin = proxyAdmin({ ...deps, newUid: deps.newUid ?? randomUUID });
  const app = new OpenAPIHono({ defaultHook: validationHook });

  app.onError(recover({ log: deps.log }));
  // Returned, not thrown: methodNotAllowed() below only turns a 404 into a 405 when no error was raised.
  app.notFound((c) => c.json(new ApiError(404, 'not_found', 'no such route').body(), 404));
  app.use(requestId());
  app.use(traceContext());
  // An address that failed authentication too often is refused before anything else runs — its credential
  // unchecked, its body unread, not even a request-log line (the limit logs a summary now and then) — and
  // every other request that fails authentication further down spends from its address's bucket.
  const authFailures = deps.authFailureLimit ? authFailureLimit(deps.authFailureLimit) : undefined;
  if (authFailures) app.use(authFailures);
  app.use(requestLog({ log: deps.log, routine: routineRequest }));
  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        c.json({ error: 'method_not_allowed', message: `allowed: ${methods.join(', ')}` }, 405, {
          Allow: methods.join(', '),
        }),
    }),
  );
  // Credentials first, then the body (invariant: auth is checked before anything else): a caller without
  // them gets 401, not 413, and its body is never read. Admin auth guards the admin surface; crawler tokens
  // also open GET /v1/proxies (discovery), the lease routes and /openapi.json (leases/index.ts). On every
  // admin-only route (/v1/proxies writes and reads by name, /v1/jobs, /fleet, /v1/gateway) a valid crawler
  // token is 403 forbidden, not 401: it is a credential, just not one for there (guards.adminOnly).
  // `/v1/proxies/*` also matches `/v1/proxies`.
  const guards = leaseGuards(deps.leases, deps.auth);
  app.use('/v1/proxies/*', guards.proxies);
  app.use('/openapi.json', guards.crawler);
  if (deps.leases) useLeaseGuards(app, deps.leases, guards.crawler);
  // /v1/jobs is for admins only (pausing probes or running GC is never a crawler's business).
  app.use('/v1/jobs/*', guards.admin);
  // Per-caller rate limits, after every guard above (keyed by the principal they set) and before the body
  // limit (a refused request is not read). The fleet page and /v1/gateway authenticate inside their
  // sub-apps, so they run the same instance after their own auth; the worker routes have their own limits.
  const callerLimit = deps.callerLimit ? callerRateLimit(deps.callerLimit) : undefined;
  if (callerLimit) app.use(callerLimit);
  // Worker reports carry up to 10,000 counts and a routing policy up to 256 KiB: the worker and gateway
  // routes authenticate and bound each body themselves (workers/http.ts limitBytes).
  // The fleet page checks its credential itself (a header or its cookie) and reads no body but its login
  // form's: its other routes skip the limit, so that a caller without a credential gets its 401 unread.
  const limit = limitBody({ maxBytes: deps.maxBodyBytes });
  const ownLimits = ['/v1/workers/', '/v1/gateway/'];
  const unread = (path: string) =>
    (path === '/fleet' || path.startsWith('/fleet/')) && path !== '/fleet/login';
  app.use((c, next) =>
    ownLimits.some((p) => c.req.path.startsWith(p)) || unread(c.req.path) ? next() : limit(c, next),
  );

  app.openapi(healthRoute, (c) => c.json({ ok: true as const, version: deps.version }, 200));
  app.route('/v1/proxies', proxyRoutes(admin, deps.leases?.discovery));
  if (deps.leases) app.route('/', leaseApi(deps.leases));
  if (deps.echo) app.route('/', echoRoutes(deps.echo));
  if (deps.workers) {
    const adminAuth = guards.adminOnly(deps.workers.adminAuth);
    app.route('/', workersApi({ ...deps.workers, adminAuth, callerLimit }, deps.store));
  }
  if (deps.fleet)
    app.route(
      '/fleet',
      fleetApp({
        ...deps,
        auth: guards.adminOnly(deps.auth),
        feed: deps.fleet,
        tokenInUrl: deps.fleetTokenInUrl ?? true,
        callerLimit,
      }),
    );
  if (deps.jobs) app.route('/v1/jobs', jobRoutes(jobControls({ ...deps.jobs, log: deps.log })));
  // Every JSON route but this document itself; what stays out (the fleet page's HTML and event stream,
  // /metrics) and why: docs/api.md § OpenAPI, and openapi-document.unit.test.ts, which fails on a route that
  // is neither documented nor excluded.
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: { title: 'proxyplane API', version: deps.version, description: 'See docs/api.md.' },
    security: adminSecurity,
  });
  registerSecuritySchemes(app.openAPIRegistry);
  if (callerLimit || authFailures) documentRateLimitOn(app);
  return app;
}

export type ApiApp = ReturnType<typeof createApp>;
