// The discovery + lease API as one mountable sub-app: `app.route('/', leaseApi(deps))`.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { LeaseStore, ProxyCatalog } from '../../../../shared/src/ports/lease-store.js';
import type { AuthEnv } from '../discovery/auth.js';
import type { StructuredLog } from '../discovery/log.js';
import { createDiscoveryRoutes } from '../discovery/routes.js';
import type { LeaseMetrics } from './metrics.js';
import { createLeaseRoutes } from './routes.js';
import type { LeaseService } from './service.js';

export interface LeaseApiDeps {
  service: LeaseService;
  catalog: ProxyCatalog;
  store: LeaseStore;
  clock: Clock;
  metrics: LeaseMetrics;
  log: StructuredLog;
}

export function leaseApi(deps: LeaseApiDeps) {
  const app = new OpenAPIHono<AuthEnv>();
  app.route('/', createDiscoveryRoutes({ ...deps, ready: () => deps.service.ready() }));
  app.route('/', createLeaseRoutes(deps));
  return app;
}
