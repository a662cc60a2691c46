// The gateway admin routes (/v1/gateway) as OpenAPI route definitions (createRoute): the zod schemas their
// bodies and parameters are validated with, and those of what they answer (admin-views.ts is typed by
// them), so that /openapi.json documents them (docs/gateway-control-plane.md § Admin endpoints).
import { createRoute, z } from '@hono/zod-openapi';
import { urlCarriesCredentials } from '../../../../shared/src/domain/health-check-url.js';
import { AttributeKey, ProxyName } from '../../../../shared/src/domain/proxy.js';
import {
  MAX_TARGET_CHECKS,
  RoutingRules,
  refuseUnmatchableHosts,
  withoutTrailingDots,
} from '../../../../shared/src/messages/gateway-snapshot.js';
import { noBody } from '../middleware/no-body.js';
import { noQuery } from '../middleware/no-query.js';
import { ifMatchHeader } from '../routes/if-match-header.js';
import { refusesBody } from '../routes/openapi-no-body.js';
import { adminResponses, error, json } from '../routes/openapi-responses.js';
import { adminSecurity } from '../routes/openapi-security.js';
import { isDocumentId } from '../validation/document-id.js';
import { json as jsonBody, limitBytes } from './http.js';

// The stored routing's rule (the wire schema's plus each route's targetCheck, which snapshots leave out;
// unique names included): what is accepted here, every worker accepts.
// Selector keys are held to the proxy attribute-key rule on top of it: a key that is not an attribute key
// can never match a proxy, and some are not even storable ("__name__", "__x__" are Firestore-reserved
// field names: the write failed on every retry). Only here, not in the wire schema: routing documents and
// snapshots already stored with such keys must still parse. So are hosts, to those a request can have
// (refuseUnmatchableHosts: `10.0.0.1:8080` was stored with a 200 and matched nothing), the same way.
const SelectorKeys = z.record(AttributeKey, z.unknown());
export const RoutingBody = z
  .object({ routes: RoutingRules.min(1) })
  .strict()
  .superRefine((body, ctx) => {
    const checked = body.routes.filter((r) => r.targetCheck !== undefined).length;
    if (checked > MAX_TARGET_CHECKS) {
      ctx.addIssue({
        code: 'custom',
        path: ['routes'],
        message: `at most ${MAX_TARGET_CHECKS} routes may carry a targetCheck (${checked} do)`,
        params: { issue: 'too_many_target_checks' },
      });
    }
    body.routes.forEach((route, i) => {
      // Stored, shown by GET and sent through every proxy of the route: never credentials, however the
      // authority is spelled (the wire schema's check misses `http:///user:pw@host/`, which the URL
      // parser reads as userinfo; it stays as it was there, for documents already stored).
      if (route.targetCheck && urlCarriesCredentials(route.targetCheck.url)) {
        ctx.addIssue({
          code: 'custom',
          path: ['routes', i, 'targetCheck', 'url'],
          message: 'a target check URL must not carry credentials',
        });
      }
      const keys = SelectorKeys.safeParse(route.selector);
      for (const issue of keys.success ? [] : keys.error.issues) {
        ctx.addIssue({ ...issue, path: ['routes', i, 'selector', ...issue.path] });
      }
    });
    refuseUnmatchableHosts(body.routes, ctx, ['routes']);
  })
  // As the store writes them (and the PUT answers them): a name's trailing dot dropped.
  .transform((body) => ({ ...body, routes: withoutTrailingDots(body.routes) }));
export const ReclaimBody = z
  .object({
    ttlSeconds: z
      .number()
      .int()
      .min(60)
      .max(7 * 86_400),
  })
  .strict();
export const ReclaimParam = z.object({ proxy: ProxyName });

// `?all=true` lists every stored worker document (one per gateway instance started on Cloud Run within the
// retention: domain/workers/retention.ts), a page at a time: for finding an old one. The default is what
// the snapshot pass sees (domain/workers/view.ts), a set bounded by the instances alive in the last hour.
export const AllQuery = z.enum(['true', 'false']).optional();
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
export const PageSize = z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE);
// The token is the id of the last document of the page before, base64url-encoded: opaque to callers, and
// no id needs escaping in a URL. Usually a worker id, but any document id: a page may end on a document
// made by hand in the console (skipped as unreadable, never the end of the listing).
export const PageToken = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,2048}$/)
  // Only the encoding the list hands out: UTF-8 text, in canonical base64url ('zzzzzzzz' decodes to bytes
  // that are no text).
  .refine(
    (t) => Buffer.from(Buffer.from(t, 'base64url').toString('utf8'), 'utf8').toString('base64url') === t,
  )
  .transform((t) => Buffer.from(t, 'base64url').toString('utf8'))
  // Anything else (empty, a slash, '..', NUL bytes, a reserved __id__, an id too long for Firestore) is the
  // caller's token at fault, a 400, not a page after some arbitrary string or a 500.
  .refine(isDocumentId)
  .optional();

const Timestamp = z.iso.datetime();
const Count = z.number().int();

export const GatewayWorkerView = z
  .object({
    workerId: z.string(),
    instanceId: z.string(),
    sessionId: z.string(),
    zone: z.string(),
    principal: z.string().openapi({ description: 'Who opened the session: `sa:<email>`, `token:<id>`' }),
    live: z.boolean(),
    validUntil: Timestamp,
    ackedVersion: Count.nullable(),
    ackedEpoch: Count.nullable(),
    lastReportSequence: Count.nullable(),
    reportAgeSeconds: Count.nullable(),
    draining: z.boolean(),
    owned: Count,
    snapshot: z
      .object({
        version: Count,
        ownershipEpoch: Count,
        proxies: Count,
        grantedUntil: Timestamp.nullable(),
        drainingAway: Count,
      })
      .nullable(),
  })
  .openapi('GatewayWorker');
export type GatewayWorkerView = z.infer<typeof GatewayWorkerView>;

export const GatewayWorkerList = z
  .object({
    epoch: Count,
    validAfter: Timestamp.nullable().openapi({
      description: 'Since when a lapsed worker is still in view; null with all=true',
    }),
    nextPageToken: z.string().nullable().optional().openapi({
      description: 'With all=true only: the pageToken of the next page; null on the last',
    }),
    workers: z.array(GatewayWorkerView),
  })
  .openapi('GatewayWorkerList');
export type GatewayWorkerList = z.infer<typeof GatewayWorkerList>;

export const OwnershipEntry = z
  .object({
    proxy: z.string(),
    inPool: z.boolean(),
    owner: z.string().nullable(),
    since: Count.nullable(),
    drainEpoch: Count.nullable(),
    capacity: Count,
    active: Count.nullable(),
    reserved: Count.nullable(),
    usable: Count,
    reason: z.string().nullable().openapi({
      description:
        'Why usable is 0 (fail-closed): no_owner, draining, ownership_expired, no_session, no_report, report_from_other_session, report_expired, epoch_mismatch; null while the counts are valid',
    }),
  })
  .openapi('GatewayOwnership');
export type OwnershipEntry = z.infer<typeof OwnershipEntry>;

const StoredRouting = z
  .object({
    routes: RoutingRules,
    updatedAt: Timestamp.nullable(),
    updatedBy: z.string().nullable(),
    default: z.boolean().openapi({ description: 'true: none stored, the built-in default' }),
    droppedDuplicates: z.array(z.string()).optional().openapi({
      description: 'Routes of a repeated name the stored document holds, dropped from every snapshot',
    }),
    revision: Count.openapi({
      description:
        'Bumped by one on every PUT that changes the routing (a PUT of the routing already stored writes nothing and keeps it); 0 while none is stored. Its ETag is `"<revision>"`, what If-Match takes',
    }),
  })
  .openapi('GatewayRouting');

/** The routing's revision as a strong entity tag in the ETag header (what If-Match on PUT takes). */
const withRoutingETag = <R extends object>(response: R) => ({
  ...response,
  headers: {
    ETag: {
      description: 'The routing\'s revision as a strong entity tag, `"<revision>"`: what If-Match takes.',
      schema: { type: 'string' as const, example: '"3"' },
    },
  },
});

/** `If-Match` on PUT /routing: `*` or a list of the routing's ETags. Malformed → 400 invalid_request. */
export const RoutingIfMatch = ifMatchHeader({
  example: '"3"',
  description:
    'Only if the routing is still at this revision: `"<revision>"` as its ETag gave it (`"0"`: none stored yet; a list: any of them; `*`: any). Otherwise 412 precondition_failed and nothing is written. A weak tag never matches.',
});

const tags = ['gateway'];
const common = adminResponses('the store or the identity check is unavailable');
// The gateway routes bound their own bodies (app.ts): a GET here refuses one (400 unexpected_body) as every
// admin GET and DELETE does, bounded at 1 KiB first.
const noBodyHere = refusesBody('or a query parameter the route does not read');

/** Both read the ownership state and shards, which a hand edit can leave out of shape. */
const ownershipUnreadable = error(
  'stored_document_invalid: ownership/state or an ownership shard no longer fits (edited by hand); internal: a bug (requestId)',
);

export const listWorkersRoute = createRoute({
  method: 'get',
  path: '/workers',
  tags,
  summary: 'The gateway workers in view, or with all=true every stored worker a page at a time',
  security: adminSecurity,
  request: {
    query: z.object({ all: AllQuery, pageSize: PageSize, pageToken: PageToken }),
  },
  responses: {
    200: json(GatewayWorkerList, 'The epoch and the workers'),
    ...common,
    ...refusesBody(
      'all not true or false, pageSize out of 1–500, a malformed pageToken, pageSize or pageToken without all=true, or another query parameter',
    ),
    500: ownershipUnreadable,
  },
});

export const ownershipRoute = createRoute({
  method: 'get',
  path: '/ownership',
  tags,
  summary: 'Per gateway-pool proxy: its owner and usable capacity, judged fail-closed',
  security: adminSecurity,
  middleware: [limitBytes(1024), noQuery(), noBody()] as const,
  responses: {
    200: json(z.object({ epoch: Count, proxies: z.array(OwnershipEntry) }), 'The epoch and the proxies'),
    ...common,
    ...noBodyHere,
    500: ownershipUnreadable,
  },
});

export const getRoutingRoute = createRoute({
  method: 'get',
  path: '/routing',
  tags,
  summary: 'The routing every snapshot carries',
  security: adminSecurity,
  middleware: [limitBytes(1024), noQuery(), noBody()] as const,
  responses: {
    200: withRoutingETag(json(StoredRouting, 'The stored routing, or the default')),
    ...common,
    ...noBodyHere,
    500: withRoutingETag(
      error(
        'stored_routing_invalid: the stored document no longer fits the route schema (edited by hand); `revision` in the body and the ETag say what If-Match a replacing PUT takes',
      ),
    ),
  },
});

export const putRoutingRoute = createRoute({
  method: 'put',
  path: '/routing',
  tags,
  summary: 'Replace the routing (asks for a snapshot pass at once)',
  security: adminSecurity,
  middleware: [limitBytes(256 * 1024), noQuery(), jsonBody()] as const,
  request: {
    headers: RoutingIfMatch,
    body: { required: true, content: { 'application/json': { schema: RoutingBody } } },
  },
  responses: {
    200: withRoutingETag(
      json(
        z.object({ routes: RoutingRules, revision: Count }),
        'Stored (or already stored: the revision then stays)',
      ),
    ),
    400: error(
      'invalid_json or invalid_request (with issues: too_many_target_checks, invalid_key, invalid_host, repeated names, invalid_if_match…), or a query parameter',
    ),
    412: error(
      'precondition_failed: If-Match names none of the revision the routing is at (`revision` in the body); nothing was written',
    ),
    415: error('unsupported_media_type'),
    ...common,
    413: error('payload_too_large: the body is over 256 KiB; the connection is closed'),
  },
});

export const postReclaimRoute = createRoute({
  method: 'post',
  path: '/reclaims/{proxy}',
  tags,
  summary: 'Take a gateway-pool proxy out of the pool for ttlSeconds (for an exclusive lease)',
  security: adminSecurity,
  middleware: [limitBytes(1024), noQuery(), jsonBody()] as const,
  request: {
    params: ReclaimParam,
    body: { required: true, content: { 'application/json': { schema: ReclaimBody } } },
  },
  responses: {
    201: json(z.object({ proxy: ProxyName, until: Timestamp }), 'Reclaimed until `until`'),
    400: error(
      'invalid_json or invalid_request: not a proxy name, a body that fails its schema, a query parameter',
    ),
    404: error('not_found: no such proxy (nothing written)'),
    409: error('deletion_requested: the proxy is being deleted (nothing written)'),
    415: error('unsupported_media_type'),
    ...common,
    500: error('stored_proxy_invalid: the stored proxy no longer fits its model (nothing written)'),
    413: error('payload_too_large: the body is over 1 KiB; the connection is closed'),
  },
});

export const deleteReclaimRoute = createRoute({
  method: 'delete',
  path: '/reclaims/{proxy}',
  tags,
  summary: 'Drop a reclaim (idempotent: 204 whether or not there was one)',
  security: adminSecurity,
  middleware: [limitBytes(1024), noQuery(), noBody()] as const,
  request: { params: ReclaimParam },
  responses: {
    204: { description: 'No reclaim stands for the proxy' },
    400: error('invalid_request: not a proxy name, a body (unexpected_body), or a query parameter'),
    ...common,
    413: error('payload_too_large: the body is over 1 KiB; the connection is closed'),
  },
});
