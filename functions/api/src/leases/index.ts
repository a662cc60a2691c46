// The discovery + lease API as the service mounts it (app.ts): the guards that let crawler tokens in
// where crawlers belong, and the lease routes (+ /metrics) as one sub-app.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Hono, MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { Registry } from 'prom-client';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { LeaseStore, ProxyCatalog } from '../../../../shared/src/ports/lease-store.js';
import type { Authenticator } from '../auth/authenticator.js';
import { requireAdmin } from '../auth/middleware.js';
import { adminOnlyAuthenticator, crawlerOrAdminAuthenticator, type NamedToken } from '../discovery/auth.js';
import type { DiscoveryView } from '../discovery/list.js';
import type { LeaseMetrics } from './metrics.js';
import { createLeaseRoutes } from './routes.js';
import type { LeaseService } from './service.js';

export interface LeaseApiDeps {
  service: LeaseService;
  catalog: ProxyCatalog;
  store: LeaseStore;
  clock: Clock;
  metrics: LeaseMetrics;
  log: Logger;
  /** Crawler tokens (DISCOVERY_TOKENS); admin credentials are accepted beside them. */
  tokens: readonly NamedToken[];
  /** Annotates the admin API's GET /v1/proxies with health and lease counts. */
  discovery: DiscoveryView;
  /** Served at /metrics when given. */
  registry?: Registry;
}

export interface Guards {
  /** For /v1/proxies/*: GET /v1/proxies (discovery) takes crawler tokens too; the rest is admin-only. */
  proxies: MiddlewareHandler;
  /** Crawler token or admin credential: leases, /openapi.json, /metrics. */
  crawler: MiddlewareHandler;
  /** Admin credential only, a crawler token 403 forbidden: /v1/jobs (and the admin part of `proxies`). */
  admin: MiddlewareHandler;
  /** An admin authenticator for an admin-only surface that checks credentials itself (the fleet page,
   *  /v1/gateway): the same, with a crawler token forbidden rather than unknown. */
  adminOnly(auth: Authenticator): Authenticator;
}

export function leaseGuards(leases: LeaseApiDeps | undefined, admin: Authenticator): Guards {
  const tokens = leases?.tokens ?? [];
  const adminOnly = (auth: Authenticator) => adminOnlyAuthenticator(tokens, auth);
  const adminGuard = requireAdmin(adminOnly(admin));
  if (!leases) return { proxies: adminGuard, crawler: adminGuard, admin: adminGuard, adminOnly };
  const crawler = requireAdmin(crawlerOrAdminAuthenticator(tokens, admin));
  // HEAD is GET without the body (Hono answers it from the GET route): discovery either way.
  const discovery = (method: string) => method === 'GET' || method === 'HEAD';
  return {
    proxies: createMiddleware((c, next) =>
      (discovery(c.req.method) && c.req.path === '/v1/proxies' ? crawler : adminGuard)(c, next),
    ),
    crawler,
    admin: adminGuard,
    adminOnly,
  };
}

/**
 * Puts the crawler guard on the lease routes and /metrics. The app registers it before its body limit
 * (app.ts), so that a request without credentials is refused before its body is read; mount leaseApi()
 * only behind it.
 */
export function useLeaseGuards(app: Hono, deps: LeaseApiDeps, guard: MiddlewareHandler): void {
  app.use('/v1/leases/*', guard); // Hono's `/*` also matches `/v1/leases` itself: one check a request
  if (deps.registry) app.use('/metrics', guard);
}

/** The lease routes (+ /metrics): unguarded by themselves, see useLeaseGuards. */
export function leaseApi(deps: LeaseApiDeps) {
  const app = new OpenAPIHono();
  const { registry } = deps;
  if (registry) {
    app.get('/metrics', async (c) =>
      c.text(await registry.metrics(), 200, { 'Content-Type': registry.contentType }),
    );
  }
  app.route('/', createLeaseRoutes(deps));
  return app;
}
