// The admin routes as OpenAPI route definitions (createRoute): path, inputs, and every response, so that
// /openapi.json documents the errors too.
import { createRoute, z } from '@hono/zod-openapi';
import { jsonBody } from '../middleware/json-body.js';
import { noBody } from '../middleware/no-body.js';
import { noQuery } from '../middleware/no-query.js';
import { queryNames } from '../middleware/query-names.js';
import { MAX_LIST_PAGE_SIZE } from './list-paging.js';
import { adminResponses, error, json, withETag } from './openapi-responses.js';
import { crawlerSecurity } from './openapi-security.js';
import {
  CreateProxyRequest,
  IfMatchHeader,
  InvalidProxyDeletionBody,
  isListQueryName,
  LIST_QUERY_HINT,
  ListQuery,
  NameParam,
  ProxyBody,
  ProxyList,
  ReconcileAccepted,
  Spec,
  SpecMergePatch,
} from './proxy-schemas.js';

const common = adminResponses('the store or the identity check is unavailable');
const storedInvalid = {
  500: error(
    'stored_proxy_invalid: the stored document does not fit the model; `issues` name its fields (never their values). DELETE removes it. Or internal: a bug (`requestId`)',
  ),
};
const withBody = {
  415: error('unsupported_media_type'),
};
const MERGE_PATCH = 'application/merge-patch+json';

export const createProxyRoute = createRoute({
  method: 'post',
  path: '/',
  summary: 'Create a proxy',
  middleware: [noQuery(), jsonBody()] as const,
  request: { body: { required: true, content: { 'application/json': { schema: CreateProxyRequest } } } },
  responses: {
    201: withETag(json(ProxyBody, 'Created; a reconcile request was published')),
    400: error(
      'invalid_json, invalid_request, or port_not_allowed (a managed spec.port its firewall does not open; allowedPorts lists those it does)',
    ),
    ...withBody,
    ...common,
    409: error('already_exists: the name is taken'),
  },
});

export const listProxiesRoute = createRoute({
  method: 'get',
  path: '/',
  summary: 'List proxies',
  security: crawlerSecurity,
  description:
    'Filters: `phase=<Phase>`, `healthy`, `leasable`, `protocol=http|socks5` and any number of `attr.<key>=<value>` (all must match). Paging (AIP-158): `pageSize` and `pageToken`; without either, every matching proxy in one answer.',
  middleware: [noBody(), queryNames(isListQueryName, LIST_QUERY_HINT)] as const,
  request: { query: ListQuery },
  responses: {
    200: json(ProxyList, 'The matching proxies (of a paged listing: of this page), by name'),
    400: error(
      `invalid_request: a query parameter the route does not read or given twice, a filter value it does not take, pageSize not an integer in 1–${MAX_LIST_PAGE_SIZE}, or a pageToken it did not hand out or handed out with other filters`,
    ),
    ...common,
    403: error('forbidden: a valid identity that is neither an admin nor a crawler one'),
  },
});

export const getProxyRoute = createRoute({
  method: 'get',
  path: '/{name}',
  summary: 'Get a proxy',
  middleware: [noQuery(), noBody()] as const,
  request: { params: NameParam },
  responses: {
    200: withETag(json(ProxyBody, 'The proxy')),
    400: error('invalid_request'),
    404: error('not_found'),
    ...common,
    ...storedInvalid,
  },
});

const preconditionFailed = error(
  'precondition_failed: If-Match names none of the tags the proxy is at (its ETag, `"<generation>.<uid>"`); nothing was written',
);

const specResponses = {
  200: withETag(json(ProxyBody, 'The proxy; generation bumped only if the spec changed')),
  400: error(
    'invalid_json, invalid_request, immutable_field, or port_not_allowed (a managed port its firewall does not open; allowedPorts lists those it does)',
  ),
  ...withBody,
  ...common,
  ...storedInvalid,
  404: error('not_found'),
  409: error('conflict (concurrent edits, retry) or deletion_requested'),
  412: preconditionFailed,
};

export const replaceSpecRoute = createRoute({
  method: 'put',
  path: '/{name}/spec',
  summary: 'Replace the spec of a proxy',
  middleware: [noQuery(), jsonBody()] as const,
  request: {
    params: NameParam,
    headers: IfMatchHeader,
    body: { required: true, content: { 'application/json': { schema: Spec } } },
  },
  responses: specResponses,
});

export const patchSpecRoute = createRoute({
  method: 'patch',
  path: '/{name}/spec',
  summary: 'Patch the spec of a proxy (JSON merge patch)',
  middleware: [noQuery(), jsonBody({ mediaTypes: [MERGE_PATCH, 'application/json'] })] as const,
  request: {
    params: NameParam,
    headers: IfMatchHeader,
    body: {
      required: true,
      content: { [MERGE_PATCH]: { schema: SpecMergePatch }, 'application/json': { schema: SpecMergePatch } },
    },
  },
  responses: specResponses,
});

export const deleteProxyRoute = createRoute({
  method: 'delete',
  path: '/{name}',
  summary: 'Request deletion of a proxy',
  description:
    'Sets deletionRequestedAt; the document goes once reconcile has deleted the instance. Idempotent.',
  middleware: [noQuery(), noBody()] as const,
  request: { params: NameParam, headers: IfMatchHeader },
  responses: {
    202: withETag(
      json(
        z.union([ProxyBody, InvalidProxyDeletionBody]),
        'Deletion requested: the proxy (with its ETag); or, for a stored document that does not fit the model, an InvalidProxyDeletion (no ETag)',
      ),
    ),
    400: error('invalid_request'),
    404: error('not_found'),
    ...common,
    409: error('conflict: other writes kept landing between its read and its write (5 attempts); retry'),
    412: preconditionFailed,
  },
});

export const reconcileProxyRoute = createRoute({
  method: 'post',
  path: '/{name}/reconcile',
  summary: 'Publish a reconcile request for a proxy',
  middleware: [noQuery(), noBody()] as const,
  request: { params: NameParam },
  responses: {
    202: json(ReconcileAccepted, 'Published'),
    400: error('invalid_request'),
    404: error('not_found'),
    ...common,
    ...storedInvalid,
  },
});
