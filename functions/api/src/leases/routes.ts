// POST /v1/leases, POST /v1/leases/{id}/renew, DELETE /v1/leases/{id}, POST /v1/leases/{id}/report
// (seed §7, plus renew). Handlers are inline so that types flow from the route definitions; the work is
// in LeaseService. Bodies go through the admin API's jsonBody()/noBody() gates, so the same bad input
// gets the same stable code on every route of the service.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { IDEMPOTENCY_KEY, IDEMPOTENCY_WINDOW_MS } from '../../../../shared/src/domain/leases/idempotency.js';
import {
  AcquireRequest,
  LeaseGrant,
  LeaseIdParam,
  NoMatch,
  RenewRequest,
  RenewResponse,
  ReportRequest,
} from '../../../../shared/src/domain/leases/wire.js';
import { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import type { Principal } from '../auth/authenticator.js';
import { holderOf } from '../discovery/auth.js';
import { jsonBody } from '../middleware/json-body.js';
import { noBody } from '../middleware/no-body.js';
import { noQuery } from '../middleware/no-query.js';
import { payloadTooLarge } from '../routes/openapi-responses.js';
import { crawlerSecurity } from '../routes/openapi-security.js';
import { ErrorBody } from '../routes/proxy-schemas.js';
import { jsonContent, leaseErrors, optionalJsonBody, validationHook } from './http.js';
import type { LeaseMetrics, LeaseOp } from './metrics.js';
import type { LeaseService } from './service.js';
import { storeUnavailable } from './unavailable.js';

const error = (description: string) => jsonContent(ErrorBody, description);
const security = crawlerSecurity;
const common = {
  401: error('unauthenticated'),
  403: error('forbidden'),
  // The body limit stands in front of every route, release (which takes no body) included.
  ...payloadTooLarge,
  503: error('unavailable: the lease store is busy or restarting; retry after Retry-After'),
};
const withBody = {
  400: error(
    'invalid_json or invalid_request (with issues; or a query parameter, which these routes refuse)',
  ),
  415: error('unsupported_media_type'),
};

const windowMinutes = IDEMPOTENCY_WINDOW_MS / 60_000;
/** The header name as Hono's header validator keys it (lower case); HTTP takes any case. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
const AcquireHeaders = z.object({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .regex(IDEMPOTENCY_KEY)
    .optional()
    .meta({
      description: `Idempotency-Key: 1–128 characters of A–Z a–z 0–9 . _ : - (a UUID fits); anything else is 400 invalid_idempotency_key. Within ${windowMinutes} minutes of the first grant, the same key from the same caller with the same request answers 201 with the same lease (header Idempotent-Replayed: true) and acquires nothing; with another request 422 idempotency_key_reused; once that lease has ended (released or expired), or a replay answered with it and its proxy has been withdrawn since, 409 idempotency_key_spent. Send a fresh random key per logical acquire and the same one on its retries.`,
      examples: ['0f8fad5b-d9cb-469f-a165-70867728950e'],
    }),
});

const acquire = createRoute({
  method: 'post',
  path: '/v1/leases',
  tags: ['leases'],
  summary: 'Lease a proxy',
  description:
    'Among healthy proxies matching the selector, not cooling down for the target and with room, grants the one with the fewest active leases, then the lowest latency, then by name; a proxy whose health verdict is SUSPECT (Healthy with reason ProbeSuspect or PassiveSuspect) only when no other has room. `{}` leases any HTTP proxy for 300 s: SOCKS5 proxies only when `protocols` names `socks5`, never a cordoned proxy or one a gateway holds.',
  security,
  middleware: [noQuery(), jsonBody()] as const,
  request: {
    headers: AcquireHeaders,
    body: { required: true, ...jsonContent(AcquireRequest, 'What to lease') },
  },
  responses: {
    201: {
      ...jsonContent(
        LeaseGrant,
        'Granted (or, under an Idempotency-Key already used for this request, the lease it was granted). The proxy URL carries credentials: keep it secret.',
      ),
      headers: {
        'Idempotent-Replayed': {
          description:
            '`true` when the answer is the lease an earlier request with the same Idempotency-Key got',
          schema: { type: 'string', enum: ['true'] },
        },
      },
    },
    409: {
      content: {
        'application/json': {
          schema: z.union([NoMatch, ErrorBody]),
        },
      },
      description:
        'no_match: no proxy can be leased now; the counts say why (with proxies cooling down: cooldownEndsAt and a Retry-After header, to the soonest end). Or idempotency_key_spent: the lease this Idempotency-Key was granted has ended (released or expired), or was answered with already and its proxy has been withdrawn since; use a new key.',
    },
    422: error(
      'idempotency_key_reused: this Idempotency-Key was used with another request (selector, ttlSeconds, target, exclusive or protocols) within its window; nothing acquired',
    ),
    ...withBody,
    400: error(
      'invalid_json, invalid_request (with issues; or a query parameter, which these routes refuse) or invalid_idempotency_key',
    ),
    ...common,
  },
});

const renew = createRoute({
  method: 'post',
  path: '/v1/leases/{id}/renew',
  tags: ['leases'],
  summary: 'Extend a lease to now + ttlSeconds (never shortens it); the body is optional',
  security,
  middleware: [noQuery(), optionalJsonBody()] as const,
  request: { params: LeaseIdParam, body: { required: false, ...jsonContent(RenewRequest, 'New TTL') } },
  responses: {
    200: jsonContent(RenewResponse, 'Renewed'),
    404: error('unknown_lease'),
    409: error(
      'lease_expired, lease_released, proxy_withdrawn (its proxy is being deleted, joined the gateway pool or moved to another address) or proxy_cordoned (an operator cordoned its proxy: the lease runs to its expiresAt, reports and release still work): acquire a new lease',
    ),
    ...withBody,
    ...common,
    503: error(
      'unavailable: the lease store is busy or restarting, or (a gateway-pool proxy) the replica is re-reading who owns it; retry after Retry-After',
    ),
  },
});

const release = createRoute({
  method: 'delete',
  path: '/v1/leases/{id}',
  tags: ['leases'],
  summary: 'Release a lease (idempotent: unknown, expired and released leases also answer 204)',
  security,
  middleware: [noQuery(), noBody()] as const,
  request: { params: LeaseIdParam },
  responses: {
    204: { description: 'Released' },
    400: error('invalid_request: a body or a query parameter was sent'),
    ...common,
  },
});

const report = createRoute({
  method: 'post',
  path: '/v1/leases/{id}/report',
  tags: ['leases'],
  summary: 'Report how the proxy did; rate_limited and banned start a cooldown of (proxy, target)',
  description:
    'The target falls back report → lease → global. A lease still resolves for CooldownWindow after it ended, because a late report arrives exactly when the proxy is being rate-limited.',
  security,
  middleware: [noQuery(), jsonBody()] as const,
  request: { params: LeaseIdParam, body: { required: true, ...jsonContent(ReportRequest, 'The result') } },
  responses: {
    204: { description: 'Recorded' },
    404: error('unknown_lease'),
    ...withBody,
    400: error('invalid_result, invalid_json or invalid_request'),
    ...common,
  },
});

export interface LeaseRouteDeps {
  service: LeaseService;
  metrics: LeaseMetrics;
  log: Logger;
}

type Env = { Variables: { principal?: Principal } };

export function createLeaseRoutes({ service, metrics, log }: LeaseRouteDeps) {
  const app = new OpenAPIHono<Env>();
  app.onError(leaseErrors(log));
  const hook = (op: LeaseOp) => validationHook((code) => metrics.leaseRequest(op, code));
  // A lease store that fails is a 503 from leaseErrors(); counted and logged here, where the operation is
  // known, so that an outage of the store shows on /metrics and in the alert for every operation.
  const counted = async <T>(op: LeaseOp, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      if (err instanceof LeaseStoreError) storeUnavailable({ metrics, log }, op, err);
      throw err;
    }
  };
  const unknown = {
    error: 'unknown_lease',
    message: 'no such lease (or it ended more than CooldownWindow ago)',
  };

  return app
    .openapi(
      acquire,
      async (c) => {
        const body = c.req.valid('json');
        const key = c.req.valid('header')[IDEMPOTENCY_HEADER];
        const holder = holderOf(c.get('principal'));
        const outcome = await counted('acquire', () => service.acquire(body, holder, key));
        metrics.leaseRequest(
          'acquire',
          outcome.kind === 'granted' && outcome.replayed ? 'replayed' : outcome.kind,
        );
        if (outcome.kind === 'granted') {
          const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
          if (outcome.replayed) headers['Idempotent-Replayed'] = 'true';
          return c.json(outcome.grant, 201, headers);
        }
        if (outcome.kind === 'no_match') {
          // Only a cooldown's end is a time something frees up: capacity frees when a holder lets go.
          const retry = outcome.retryAfterSeconds;
          return c.json(outcome.body, 409, retry === undefined ? {} : { 'Retry-After': String(retry) });
        }
        if (outcome.kind === 'key_reused') {
          return c.json(
            {
              error: 'idempotency_key_reused',
              message:
                'this Idempotency-Key came with another request within its window; send a new key for a new request',
            },
            422,
          );
        }
        if (outcome.kind === 'key_spent') {
          return c.json(
            {
              error: 'idempotency_key_spent',
              message: outcome.withdrawn
                ? 'the lease granted under this Idempotency-Key was answered with already and its proxy has been withdrawn since; acquire with a new key'
                : 'the lease granted under this Idempotency-Key has ended (released or expired); acquire with a new key',
            },
            409,
          );
        }
        return c.json(
          { error: 'unavailable', message: 'credentials of the matching proxies cannot be read now' },
          503,
          { 'Retry-After': '30' },
        );
      },
      hook('acquire'),
    )
    .openapi(
      renew,
      async (c) => {
        const { id } = c.req.valid('param');
        const { ttlSeconds } = c.req.valid('json');
        const outcome = await counted('renew', () => service.renew(id, ttlSeconds));
        metrics.leaseRequest('renew', outcome.kind);
        if (outcome.kind === 'renewed') {
          const { id, expiresAt, ttlSeconds } = outcome.lease;
          return c.json({ leaseId: id, expiresAt: expiresAt.toISOString(), ttlSeconds }, 200);
        }
        if (outcome.kind === 'unknown') return c.json(unknown, 404);
        if (outcome.kind === 'cordoned') {
          return c.json(
            {
              error: 'proxy_cordoned',
              message: `proxy ${outcome.lease.proxy} is cordoned (no new work); the lease runs until ${outcome.lease.expiresAt.toISOString()} and is not renewed: acquire a new one`,
            },
            409,
          );
        }
        if (outcome.kind === 'withdrawn') {
          return c.json(
            {
              error: 'proxy_withdrawn',
              message: `proxy ${outcome.lease.proxy} is being deleted, has joined the gateway pool or listens at another address now; the lease runs until ${outcome.lease.expiresAt.toISOString()} and is not renewed: acquire a new one`,
            },
            409,
          );
        }
        const expired = outcome.kind === 'expired';
        return c.json(
          {
            error: expired ? 'lease_expired' : 'lease_released',
            message: `the lease has ${expired ? 'expired' : 'been released'}; acquire a new one`,
          },
          409,
        );
      },
      hook('renew'),
    )
    .openapi(
      release,
      async (c) => {
        const { id } = c.req.valid('param');
        await counted('release', () => service.release(id));
        metrics.leaseRequest('release', 'released');
        return c.body(null, 204);
      },
      hook('release'),
    )
    .openapi(
      report,
      async (c) => {
        const { id } = c.req.valid('param');
        const body = c.req.valid('json');
        const outcome = await counted('report', () => service.report(id, body));
        metrics.leaseRequest('report', outcome);
        if (outcome === 'unknown_lease') return c.json(unknown, 404);
        return c.body(null, 204);
      },
      hook('report'),
    );
}
