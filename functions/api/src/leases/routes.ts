// POST /v1/leases, POST /v1/leases/{id}/renew, DELETE /v1/leases/{id}, POST /v1/leases/{id}/report
// (seed §7, plus renew). Handlers are inline so that types flow from the route definitions; the work is
// in LeaseService.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import {
  AcquireRequest,
  LeaseGrant,
  LeaseIdParam,
  NoMatch,
  RenewRequest,
  RenewResponse,
  ReportRequest,
} from '../../../../shared/src/domain/leases/wire.js';
import { ANONYMOUS, type AuthEnv } from '../discovery/auth.js';
import type { StructuredLog } from '../discovery/log.js';
import { errorResponse, jsonContent, leaseErrors, validationHook } from './http.js';
import type { LeaseMetrics, LeaseOp } from './metrics.js';
import type { LeaseService } from './service.js';

const security = [{ bearer: [] }];
const common = {
  400: errorResponse('Invalid request: invalid_json, invalid_request, unknown_field or invalid_<field>'),
  401: errorResponse('unauthorized'),
  503: errorResponse('store_unavailable, contended or not_ready: retry after the Retry-After delay'),
};

const acquire = createRoute({
  method: 'post',
  path: '/v1/leases',
  tags: ['leases'],
  summary: 'Lease a proxy',
  description:
    'Among healthy proxies matching the selector, not cooling down for the target and with room, grants the one with the fewest active leases, then the lowest latency, then by name.',
  security,
  request: { body: { required: true, ...jsonContent(AcquireRequest, 'What to lease') } },
  responses: {
    201: jsonContent(LeaseGrant, 'Granted. The proxy URL carries credentials: keep it secret.'),
    409: jsonContent(NoMatch, 'No proxy can be leased now; the counts say why.'),
    ...common,
  },
});

const renew = createRoute({
  method: 'post',
  path: '/v1/leases/{id}/renew',
  tags: ['leases'],
  summary: 'Extend a lease to now + ttlSeconds (never shortens it)',
  security,
  request: { params: LeaseIdParam, body: { required: false, ...jsonContent(RenewRequest, 'New TTL') } },
  responses: {
    200: jsonContent(RenewResponse, 'Renewed'),
    404: errorResponse('unknown_lease'),
    409: errorResponse('lease_expired or lease_released: acquire a new lease'),
    ...common,
  },
});

const release = createRoute({
  method: 'delete',
  path: '/v1/leases/{id}',
  tags: ['leases'],
  summary: 'Release a lease (idempotent: unknown, expired and released leases also answer 204)',
  security,
  request: { params: LeaseIdParam },
  responses: { 204: { description: 'Released' }, 401: common[401], 503: common[503] },
});

const report = createRoute({
  method: 'post',
  path: '/v1/leases/{id}/report',
  tags: ['leases'],
  summary: 'Report how the proxy did; rate_limited and banned start a cooldown of (proxy, target)',
  description:
    'The target falls back report → lease → global. A lease still resolves for CooldownWindow after it ended, because a late report arrives exactly when the proxy is being rate-limited.',
  security,
  request: { params: LeaseIdParam, body: { required: true, ...jsonContent(ReportRequest, 'The result') } },
  responses: { 204: { description: 'Recorded' }, 404: errorResponse('unknown_lease'), ...common },
});

export interface LeaseRouteDeps {
  service: LeaseService;
  metrics: LeaseMetrics;
  log: StructuredLog;
}

export function createLeaseRoutes({ service, metrics, log }: LeaseRouteDeps) {
  const app = new OpenAPIHono<AuthEnv>();
  app.onError(leaseErrors(log));
  const hook = (op: LeaseOp) => validationHook((code) => metrics.leaseRequest(op, code));

  return app
    .openapi(
      acquire,
      async (c) => {
        const outcome = await service.acquire(c.req.valid('json'), c.get('principal') ?? ANONYMOUS);
        metrics.leaseRequest('acquire', outcome.kind);
        if (outcome.kind === 'granted') {
          c.header('Cache-Control', 'no-store');
          return c.json(outcome.grant, 201);
        }
        if (outcome.kind === 'no_match') return c.json(outcome.body, 409);
        c.header('Retry-After', '30');
        return c.json({ error: 'credentials_unavailable' }, 503);
      },
      hook('acquire'),
    )
    .openapi(
      renew,
      async (c) => {
        const outcome = await service.renew(c.req.valid('param').id, c.req.valid('json').ttlSeconds);
        metrics.leaseRequest('renew', outcome.kind);
        if (outcome.kind === 'renewed') {
          const { id, expiresAt, ttlSeconds } = outcome.lease;
          return c.json({ leaseId: id, expiresAt: expiresAt.toISOString(), ttlSeconds }, 200);
        }
        if (outcome.kind === 'unknown') return c.json({ error: 'unknown_lease' }, 404);
        return c.json({ error: outcome.kind === 'expired' ? 'lease_expired' : 'lease_released' }, 409);
      },
      hook('renew'),
    )
    .openapi(release, async (c) => {
      await service.release(c.req.valid('param').id);
      metrics.leaseRequest('release', 'released');
      return c.body(null, 204);
    })
    .openapi(
      report,
      async (c) => {
        const outcome = await service.report(c.req.valid('param').id, c.req.valid('json'));
        metrics.leaseRequest('report', outcome);
        if (outcome === 'unknown_lease') return c.json({ error: 'unknown_lease' }, 404);
        return c.body(null, 204);
      },
      hook('report'),
    );
}
