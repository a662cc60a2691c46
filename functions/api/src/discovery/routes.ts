// GET /v1/proxies?attr.k=v&healthy=true (seed §7): the fleet as crawlers see it, from the listener-fed
// catalog, each proxy with its active lease count. An empty list is 200, not 404.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { proxyEndpoint } from '../../../../shared/src/domain/leases/endpoint.js';
import { parseProxyQuery } from '../../../../shared/src/domain/leases/query.js';
import { isLeasable, matchesSelector } from '../../../../shared/src/domain/leases/selection.js';
import { ProxyList, type ProxySummary } from '../../../../shared/src/domain/leases/wire.js';
import { Phase, type ProxyResource } from '../../../../shared/src/domain/proxy.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { LeaseStore, ProxyCatalog } from '../../../../shared/src/ports/lease-store.js';
import { errorResponse, jsonContent, leaseErrors, validationHook } from '../leases/http.js';
import type { LeaseMetrics } from '../leases/metrics.js';
import type { AuthEnv } from './auth.js';
import type { StructuredLog } from './log.js';

const ListQuery = z.looseObject({
  healthy: z
    .enum(['true', 'false'])
    .optional()
    .meta({ description: 'Only proxies a lease could go to now (or only the others).' }),
  phase: Phase.optional(),
});

const list = createRoute({
  method: 'get',
  path: '/v1/proxies',
  tags: ['discovery'],
  summary: 'List proxies',
  description:
    'Filters: `attr.<key>=<value>` (attribute equality; repeat for several keys), `healthy`, `phase`. Unknown or repeated parameters are a 400 invalid_query.',
  security: [{ bearer: [] }],
  request: { query: ListQuery },
  responses: {
    200: jsonContent(ProxyList, 'Matching proxies, by name'),
    400: errorResponse('invalid_query'),
    401: errorResponse('unauthorized'),
    503: errorResponse('not_ready'),
  },
});

export interface DiscoveryRouteDeps {
  catalog: ProxyCatalog;
  store: Pick<LeaseStore, 'usage'>;
  clock: Clock;
  /** Resolves once catalog and lease views have loaded (throws LeaseStoreError otherwise). */
  ready: () => Promise<void>;
  metrics: LeaseMetrics;
  log: StructuredLog;
}

export function createDiscoveryRoutes(deps: DiscoveryRouteDeps) {
  const app = new OpenAPIHono<AuthEnv>();
  app.onError(leaseErrors(deps.log));
  return app.openapi(
    list,
    async (c) => {
      const parsed = parseProxyQuery(new URL(c.req.url).searchParams);
      if (!parsed.ok) {
        deps.metrics.leaseRequest('list', 'invalid_query');
        return c.json({ error: 'invalid_query', param: parsed.param, message: parsed.message }, 400);
      }
      await deps.ready();
      const { attributes, healthy, phase } = parsed.query;
      const now = deps.clock.now();
      const proxies = deps.catalog
        .list()
        .filter(
          (p) =>
            matchesSelector(p, attributes) &&
            (healthy === undefined || isLeasable(p) === healthy) &&
            (phase === undefined || p.status.phase === phase),
        )
        .map((p) => summarize(p, deps.store.usage(p.name, now).active));
      deps.metrics.leaseRequest('list', 'ok');
      return c.json({ proxies, count: proxies.length }, 200);
    },
    validationHook((code) => deps.metrics.leaseRequest('list', code)),
  );
}

export function summarize(p: ProxyResource, activeLeases: number): ProxySummary {
  return {
    name: p.name,
    attributes: p.spec.attributes,
    phase: p.status.phase,
    healthy: isLeasable(p),
    capacity: p.spec.capacity,
    activeLeases,
    latencyMillis: p.status.latencyMillis,
    endpoint: proxyEndpoint(p),
  };
}
