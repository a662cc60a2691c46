// The gateway control plane's HTTP surface as one mountable sub-app: worker routes under /v1/workers (worker
// identities), admin views and config under /v1/gateway (admin auth). `app.route('/', workersApi(deps))`;
// an OpenAPIHono, so that the app's /openapi.json takes in the routes' definitions.
import { OpenAPIHono } from '@hono/zod-openapi';
import { type GatewayAdminDeps, gatewayAdminRoutes } from './admin-routes.js';
import { type WorkerRoutesDeps, workerRoutes } from './routes.js';

export type WorkersApiDeps = WorkerRoutesDeps &
  Omit<GatewayAdminDeps, 'auth' | 'proxies'> & { adminAuth: GatewayAdminDeps['auth'] };

/** `proxies` is the admin API's own proxy store (a reclaim must name a proxy that exists). */
export function workersApi(deps: WorkersApiDeps, proxies: GatewayAdminDeps['proxies']) {
  const app = new OpenAPIHono();
  app.route('/v1/workers', workerRoutes(deps));
  app.route('/v1/gateway', gatewayAdminRoutes({ ...deps, auth: deps.adminAuth, proxies }));
  return app;
}
