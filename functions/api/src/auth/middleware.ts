// Requires an admin credential: 401 (with WWW-Authenticate, RFC 6750 §3) when there is none or it is
// invalid, 403 when the identity is not allowed, 503 when it cannot be checked. On success the principal
// is in c.var for the request log.
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../errors.js';
import { type Authenticator, bearerToken, type Principal } from './authenticator.js';

export const requireAdmin = (authenticator: Authenticator) =>
  createMiddleware<{ Variables: { principal: Principal } }>(async (c, next) => {
    const outcome = await authenticator.authenticate(bearerToken(c.req.header('authorization')));
    if (outcome.ok) {
      c.set('principal', outcome.principal);
      return next();
    }
    if (outcome.code === 'forbidden') throw new ApiError(403, 'forbidden', outcome.reason);
    if (outcome.code === 'unavailable') {
      throw new ApiError(503, 'unavailable', outcome.reason, { retryAfterSeconds: 5 });
    }
    throw new ApiError(401, 'unauthenticated', outcome.reason, {
      headers: { 'WWW-Authenticate': 'Bearer realm="proxyplane"' },
    });
  });
