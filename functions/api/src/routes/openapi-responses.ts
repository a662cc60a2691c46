// OpenAPI response entries shared by the admin route tables (proxies, jobs): a JSON body with its schema,
// the stable error body, and the answers every admin route can give.
import { ErrorBody } from './proxy-schemas.js';

export const json = <T>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const error = (description: string) => json(ErrorBody, description);

/** 401, 403 and 503, with what "unavailable" means for this route table. */
export const adminResponses = (unavailable: string) => ({
  401: error('unauthenticated: no valid credential'),
  403: error(
    'forbidden: a valid credential that is not an admin one (a crawler token, a non-admin identity)',
  ),
  503: error(`unavailable: ${unavailable}; see Retry-After`),
});

/** A proxy in the body and its ETag, `"<generation>"` (admin/if-match.ts), in the header. */
export const withETag = <R extends object>(response: R) => ({
  ...response,
  headers: {
    ETag: {
      description:
        'The proxy\'s spec generation as a strong entity tag, `"<generation>"`: what If-Match takes.',
      schema: { type: 'string' as const, example: '"7"' },
    },
  },
});
