// The Hono service: admin API today; discovery, leases and worker endpoints mount beside it. Built from
// plain parameters (createApp(deps)) so that tests drive it with app.request() and fakes, and the
// end-to-end tests start it in-process (server.ts). Nothing here reads process.env.
import { randomUUID } from 'node:crypto';
import { OpenAPIHono } from '@hono/zod-openapi';
import { methodNotAllowed } from 'hono/method-not-allowed';
import { requestId } from 'hono/request-id';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import { proxyAdmin } from './admin/proxy-admin.js';
import type { Authenticator } from './auth/authenticator.js';
import { requireAdmin } from './auth/middleware.js';
import { type EchoOptions, echoRoutes } from './echo/echo-routes.js';
import { ApiError } from './errors.js';
import { limitBody } from './middleware/body-limit.js';
import { recover } from './middleware/recover.js';
import { requestLog } from './middleware/request-log.js';
import { proxyRoutes } from './routes/proxies.js';
import { validationHook } from './validation/hook.js';

export interface ApiDeps {
  /** Reported by /healthz and /openapi.json. */
  version: string;
  store: ProxyStore;
  publisher: ReconcilePublisher;
  clock: Clock;
  auth: Authenticator;
  log: Logger;
  newUid?: () => string;
  maxBodyBytes?: number;
  /** GCP project id, to attach Cloud Trace ids to request logs. */
  traceProject?: string;
  /** Mounts GET /v1/echo (unauthenticated: the EGRESS probe reaches it through arbitrary proxies). */
  echo?: EchoOptions;
}

export function createApp(deps: ApiDeps) {
  const admin = proxyAdmin({ ...deps, newUid: deps.newUid ?? randomUUID });
  const app = new OpenAPIHono({ defaultHook: validationHook });

  app.onError(recover({ log: deps.log }));
  // Returned, not thrown: methodNotAllowed() below only turns a 404 into a 405 when no error was raised.
  app.notFound((c) => c.json(new ApiError(404, 'not_found', 'no such route').body(), 404));
  app.use(requestId());
  app.use(requestLog({ log: deps.log, traceProject: deps.traceProject }));
  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        c.json({ error: 'method_not_allowed', message: `allowed: ${methods.join(', ')}` }, 405, {
          Allow: methods.join(', '),
        }),
    }),
  );
  app.use(limitBody({ maxBytes: deps.maxBodyBytes }));
  // Admin auth guards the admin surface only: other groups (echo today; discovery, leases and worker
  // endpoints later) bring their own. `/v1/proxies/*` also matches `/v1/proxies`.
  const adminOnly = requireAdmin(deps.auth);
  app.use('/v1/proxies/*', adminOnly);
  app.use('/openapi.json', adminOnly);

  app.get('/healthz', (c) => c.json({ ok: true, version: deps.version }));
  app.route('/v1/proxies', proxyRoutes(admin));
  if (deps.echo) app.route('/', echoRoutes(deps.echo));
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: { title: 'proxyplane API', version: deps.version, description: 'See docs/api.md.' },
    security: [{ bearer: [] }],
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'A Google identity token for an allow-listed email, or a named admin token.',
  });
  return app;
}

export type ApiApp = ReturnType<typeof createApp>;
