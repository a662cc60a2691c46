// The worker routes (/v1/workers) as OpenAPI route definitions (createRoute), from the zod schemas the
// routes validate with (shared/src/messages/worker-api.ts), so that /openapi.json documents them, their
// errors included (docs/gateway-control-plane.md § Errors).
import { createRoute, z } from '@hono/zod-openapi';
import { GatewaySnapshot, WorkerId } from '../../../../shared/src/messages/gateway-snapshot.js';
import {
  AckRequestBody,
  AckResponseBody,
  OutcomesRequestBody,
  OutcomesResponseBody,
  RegisterRequestBody,
  RegisterResponseBody,
  RuntimeRequestBody,
  RuntimeResponseBody,
  SessionId,
} from '../../../../shared/src/messages/worker-api.js';
import { refusesBody } from '../routes/openapi-no-body.js';
import { error, json } from '../routes/openapi-responses.js';
import { workerSecurity } from '../routes/openapi-security.js';

export const WorkerIdParam = z.object({ id: WorkerId });
export const SnapshotQuery = z.object({ sessionId: SessionId });

const tags = ['workers'];

const common = {
  401: error(
    'unauthenticated: no valid worker credential (WWW-Authenticate: Bearer realm="proxyplane-workers")',
  ),
  403: error(
    'forbidden: the credential may not act for this worker id, is no gateway identity, or is not the principal that opened the session',
  ),
  429: error('rate_limited: too many requests for this worker; see Retry-After'),
  500: error(
    "stored_document_invalid: the worker's document or snapshot header no longer fits (edited by hand); internal (with requestId): a bug",
  ),
  503: error('unavailable or contended: the store, Pub/Sub or the identity check; see Retry-After'),
};
const withBody = (limit: string) => ({
  413: error(`payload_too_large: the body is over ${limit}; the connection is closed`),
  415: error('unsupported_media_type'),
});
const session = {
  409: error(
    'unknown_worker, stale_session or session_expired: register again; other codes of the rule (docs/gateway-control-plane.md § Errors)',
  ),
};

export const registerRoute = createRoute({
  method: 'post',
  path: '/register',
  tags,
  summary: 'Open (or resume) a worker session',
  security: workerSecurity,
  request: {
    body: { required: true, content: { 'application/json': { schema: RegisterRequestBody } } },
  },
  responses: {
    200: json(RegisterResponseBody, 'The session'),
    400: error(
      'invalid_json, invalid_request (with issues), or unsupported_protocol_version (with supported: {min, max})',
    ),
    ...withBody('4 KiB'),
    ...common,
    500: error(
      "internal (with requestId): the worker's subscription exists with another filter, or is left on a deleted topic — an operator deletes it (docs/gateway-control-plane.md § Snapshots on Pub/Sub)",
    ),
  },
});

export const ackRoute = createRoute({
  method: 'post',
  path: '/{id}/ack',
  tags,
  summary: 'Acknowledge a snapshot (moves the session’s ACK bound)',
  security: workerSecurity,
  request: {
    params: WorkerIdParam,
    body: { required: true, content: { 'application/json': { schema: AckRequestBody } } },
  },
  responses: {
    200: json(AckResponseBody, 'Accepted'),
    400: error('invalid_json or invalid_request (with issues; a path that is not a worker id)'),
    ...withBody('4 KiB'),
    409: error(
      'unknown_worker, stale_session, session_expired, unknown_snapshot, checksum_mismatch, stale_epoch or version_regression',
    ),
    ...common,
  },
});

export const runtimeRoute = createRoute({
  method: 'post',
  path: '/{id}/runtime',
  tags,
  summary: 'Report active and reserved counts per proxy (a complete replacement)',
  security: workerSecurity,
  request: {
    params: WorkerIdParam,
    body: { required: true, content: { 'application/json': { schema: RuntimeRequestBody } } },
  },
  responses: {
    200: json(RuntimeResponseBody, 'Accepted (or a replay of the last accepted report)'),
    400: error('invalid_json, invalid_request (with issues) or invalid_counts'),
    ...withBody('1 MiB'),
    ...session,
    ...common,
  },
});

export const outcomesRoute = createRoute({
  method: 'post',
  path: '/{id}/outcomes',
  tags,
  summary: 'Report a batch of per-proxy outcomes (passive health evidence)',
  security: workerSecurity,
  request: {
    params: WorkerIdParam,
    body: { required: true, content: { 'application/json': { schema: OutcomesRequestBody } } },
  },
  responses: {
    200: json(OutcomesResponseBody, 'Recorded, or a duplicate of an accepted batch (nothing recorded)'),
    400: error('invalid_json or invalid_request (with issues)'),
    ...withBody('1 MiB'),
    ...session,
    ...common,
  },
});

export const snapshotRoute = createRoute({
  method: 'get',
  path: '/{id}/snapshot',
  tags,
  summary: 'The latest full snapshot built for the worker (the same JSON as on Pub/Sub)',
  security: workerSecurity,
  request: { params: WorkerIdParam, query: SnapshotQuery },
  responses: {
    200: json(GatewaySnapshot, 'The snapshot'),
    ...refusesBody('not a worker id, or no valid sessionId'),
    404: error('no_snapshot: none built yet for this worker (or for its session’s protocol version)'),
    ...session,
    ...common,
  },
});
