// HTTP plumbing of the lease routes in the API's error contract ({"error","message"}, errors.ts): zod
// failures → 400 invalid_request with issues (invalid_result for a report's result, as seed §7 names
// it), lease store trouble → 503 unavailable with Retry-After, everything else → the app's recover().
import type { Context, ErrorHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { ZodError } from 'zod';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { LeaseStoreError } from '../../../../shared/src/ports/lease-store.js';
import { ApiError } from '../errors.js';
import { jsonBody } from '../middleware/json-body.js';
import { recover } from '../middleware/recover.js';
import { invalidInputMessage } from '../validation/hook.js';
import { toIssues } from '../validation/issues.js';

type ValidationResult = { success: true } | { success: false; error: ZodError; target: string };

/** A route hook that reports each 400 to `onInvalid` (metrics) before answering it. */
export function validationHook(onInvalid: (code: string) => void) {
  return (result: ValidationResult, c: Context) => {
    if (result.success) return;
    const issues = toIssues(result.error);
    const badResult = result.target === 'json' && result.error.issues.some((i) => i.path[0] === 'result');
    // The only header a lease route validates (acquire's): its own code, so that a client tells it apart.
    const badKey = result.target === 'header';
    const error = badResult ? 'invalid_result' : badKey ? 'invalid_idempotency_key' : 'invalid_request';
    onInvalid(error);
    const message = badResult
      ? 'result must be ok, rate_limited or banned'
      : badKey
        ? 'Idempotency-Key must be 1–128 characters of A-Z a-z 0-9 . _ : -'
        : invalidInputMessage(result.target);
    return c.json({ error, message, issues }, 400);
  };
}

/** Lease store trouble is the caller's cue to retry: 503 with Retry-After, never a 500. */
export function leaseErrors(log: Logger): ErrorHandler {
  const fallback = recover({ log });
  return (err, c) => {
    if (!(err instanceof LeaseStoreError)) return fallback(err, c);
    const retryAfterSeconds = err.kind === 'contended' ? 1 : 2;
    return fallback(
      new ApiError(
        503,
        'unavailable',
        `lease store ${err.kind}; retry`,
        { retryAfterSeconds },
        { cause: err },
      ),
      c,
    );
  };
}

export const jsonContent = <T>(schema: T, description: string) => ({
  content: { 'application/json': { schema } },
  description,
});

/** For a body that may be left out (renew): none at all is fine; anything sent must pass jsonBody(). */
export const optionalJsonBody = () => {
  const gate = jsonBody();
  return createMiddleware(async (c, next) => {
    if (c.req.header('content-type') !== undefined) return gate(c, next);
    if ((await c.req.arrayBuffer()).byteLength > 0) {
      throw new ApiError(415, 'unsupported_media_type', 'a body must be sent as application/json');
    }
    await next();
  });
};
