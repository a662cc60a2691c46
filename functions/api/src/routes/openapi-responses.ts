// OpenAPI response entries shared by the admin route tables (proxies, jobs): a JSON body with its schema,
// the stable error body, and the answers every admin route can give.
import { ErrorBody } from './proxy-schemas.js';

export const json = <T>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const error = (description: string) => json(ErrorBody, description);

/**
 * The 413 every route can give: the body limit stands in front of all of them (app.ts), so a route that
 * takes no body answers an oversized one with 413 too (a smaller one is its 400 unexpected_body).
 */
export const payloadTooLarge = {
  413: error('payload_too_large: the body is over the limit (64 KiB by default); the connection is closed'),
};

/** 401, 403, 413 and 503, with what "unavailable" means for this route table. */
export const adminResponses = (unavailable: string) => ({
  401: error('unauthenticated: no valid credential'),
  403: error(
    'forbidden: a valid credential that is not an admin one (a crawler token, a non-admin identity)',
  ),
  ...payloadTooLarge,
  503: error(`unavailable: ${unavailable}; see Retry-After`),
});

/** A proxy in the body and its ETag, `"<generation>.<uid>"` (admin/if-match.ts proxyTag), in the header. */
export const withETag = <R extends object>(response: R) => ({
  ...response,
  headers: {
    ETag: {
      description:
        'The proxy\'s strong entity tag, `"<generation>.<uid>"` (its spec generation and its uid, so that a proxy ' +
        'deleted and created again under the same name never matches a tag of the first): what If-Match takes, ' +
        'as it came. Opaque: send it back, do not build it (a bare `"<generation>"` matches no proxy).',
      schema: { type: 'string' as const, example: '"7.0b5e2c1a-1111-4111-8111-000000000001"' },
    },
  },
});
