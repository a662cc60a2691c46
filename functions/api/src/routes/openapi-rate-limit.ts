// The 429 of the per-caller rate limit (middleware/caller-rate-limit.ts) and of the per-address limit on
// failed authentication (middleware/auth-failure-limit.ts) in /openapi.json: every operation they stand in
// front of — each one that takes a crawler or admin credential — documents it, with the same error body as
// the operation's 401. Added to the generated document rather than to each route table because the limits
// are the app's, applied outside the routes (app.ts). The worker routes document a 429 of their own (their
// per-worker limits), which the failed-authentication limit answers there too, in the same shape.
import type { OpenAPIHono } from '@hono/zod-openapi';

type Document = ReturnType<OpenAPIHono['getOpenAPI31Document']>;

export const RATE_LIMITED_DESCRIPTION =
  'rate_limited: this caller sent more of this class of request than its limit allows, or its address failed authentication too often (docs/api.md § Rate limits); see Retry-After (seconds)';

/** Not documented here: no credential (never limited), or the worker routes' own 429. */
const unlimited = (path: string) =>
  path === '/healthz' || path === '/v1/echo' || path.startsWith('/v1/workers/');

export function documentRateLimit(doc: Document): Document {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    if (unlimited(path) || !item) continue;
    for (const op of Object.values(item)) {
      const responses = (op as { responses?: Record<string, { content?: unknown }> } | undefined)?.responses;
      if (!responses || typeof responses !== 'object' || !responses['401'] || responses['429']) continue;
      responses['429'] = {
        description: RATE_LIMITED_DESCRIPTION,
        ...(responses['401'].content ? { content: responses['401'].content } : {}),
        headers: {
          'Retry-After': {
            description: 'Seconds until this caller (or address) may send such a request again.',
            schema: { type: 'integer', minimum: 1 },
          },
        },
      } as never;
    }
  }
  return doc;
}

/** Makes the app's /openapi.json carry the 429 (the generator is called per request by doc31). */
export function documentRateLimitOn(app: OpenAPIHono): void {
  const generate = app.getOpenAPI31Document;
  app.getOpenAPI31Document = (...args) => documentRateLimit(generate(...args));
}
