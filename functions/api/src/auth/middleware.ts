// Requires an admin credential: 401 (with WWW-Authenticate, RFC 6750 §3) when there is none or it is
// invalid, 403 (with `error="insufficient_scope"`, RFC 6750 §3.1) when the identity is valid but not
// allowed here — a crawler token, a Google identity not on the list —, 503 when it cannot be checked. On
// success the principal is in c.var for the request log (and the credential is known to the
// failed-authentication limit, middleware/auth-failure-limit.ts); a 401 or 403 is counted against the
// caller's address there.
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../errors.js';
import { noteAuthFailure, noteAuthSuccess } from '../middleware/auth-failure-limit.js';
import { type Authenticator, bearerToken, type Principal } from './authenticator.js';

/** RFC 6750 §3.1: a valid credential that may not do this. Clients tell it from a bad credential by it. */
export const INSUFFICIENT_SCOPE = 'Bearer realm="proxyplane", error="insufficient_scope"';

/** Retry-After of a credential that cannot be checked now (docs/api.md § Errors): every guard's 503. */
export const AUTH_UNAVAILABLE_RETRY_SECONDS = 5;

export const requireAdmin = (authenticator: Authenticator) =>
  createMiddleware<{ Variables: { principal: Principal } }>(async (c, next) => {
    const token = bearerToken(c.req.header('authorization'));
    const outcome = await authenticator.authenticate(token);
    if (outcome.ok) {
      c.set('principal', outcome.principal);
      if (outcome.principal.kind !== 'local') noteAuthSuccess(c, token); // local: auth off, nothing checked
      return next();
    }
    noteAuthFailure(c, outcome.code);
    if (outcome.code === 'forbidden') {
      throw new ApiError(403, 'forbidden', outcome.reason, {
        headers: { 'WWW-Authenticate': INSUFFICIENT_SCOPE },
      });
    }
    if (outcome.code === 'unavailable') {
      throw new ApiError(503, 'unavailable', outcome.reason, {
        retryAfterSeconds: AUTH_UNAVAILABLE_RETRY_SECONDS,
      });
    }
    throw new ApiError(401, 'unauthenticated', outcome.reason, {
      headers: { 'WWW-Authenticate': 'Bearer realm="proxyplane"' },
    });
  });
