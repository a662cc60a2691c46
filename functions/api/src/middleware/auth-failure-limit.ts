// Failed authentication, limited per client address (docs/api.md § Rate limits, class `auth-failure`).
// The per-caller limit (caller-rate-limit.ts) runs after authentication and keys on the principal, so a
// request without a valid credential spends nothing there: without this, anyone could send bad tokens
// without end, each costing a credential check (for a Google identity token an RS256 verification), a
// request-log line, and a guess. Here each address has a token bucket (token-bucket.ts) in this instance's
// memory that only failed authentications spend — a 401, or a 403 that authentication answered (a valid
// credential that may not be used there), each one token even when several were in flight at once (the
// bucket then owes them); a successful one spends nothing — and that is checked before anything else: an
// address whose bucket is empty is answered 429 rate_limited with Retry-After before its credential is
// looked at, neither in the request log nor a line of its own (one WARNING per `logQuietMs` says that it
// happens).
// A request whose bearer credential this instance has accepted before (known-credentials.ts) skips the
// bucket: checking it is no guess, and the address may be shared (Cloud NAT, Google's egress pool) with
// whoever emptied it — the gateway workers' heartbeats must not stop because a stranger behind the same
// address sends bad tokens. Such a credential that now fails is forgotten and spends a token like any
// other. /healthz and /v1/echo take no credential and are never refused.
import type { Context, MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { type AuthOutcome, bearerToken } from '../auth/authenticator.js';
import type { ErrorBody } from '../errors.js';
import { clientAddress, peerAddress, sourceKey } from './client-address.js';
import { KnownCredentials } from './known-credentials.js';
import { RateLimiter, type RateSpec } from './token-bucket.js';

/** The class of this limit on `proxyplane_rate_limited_total` (rate-limit-metrics.ts). */
export const AUTH_FAILURE_CLASS = 'auth-failure';

/** RATE_LIMIT_AUTH_FAILURE's default; why these numbers: docs/api.md § Rate limits. */
export const DEFAULT_AUTH_FAILURE_RATE: RateSpec = { perSecond: 10, burst: 100 };

/** At most one WARNING line per this long about refused addresses. */
export const AUTH_FAILURE_LOG_QUIET_MS = 60_000;

export interface AuthFailureLimitOptions {
  rate: RateSpec;
  /** Milliseconds, monotonic (performance.now in production; a test's own clock). */
  now: () => number;
  /**
   * X-Forwarded-For entries at the header's end that a front end we trust added (client-address.ts):
   * 1 on Cloud Run, 0 where the service is reached directly (the socket's peer is the client).
   */
  trustedHops: number;
  /** Addresses held at most; past that, new ones share one bucket (token-bucket.ts, `share-overflow`). */
  maxKeys?: number;
  /** Accepted credentials remembered at most (known-credentials.ts). */
  maxKnownCredentials?: number;
  /** Told of each refusal (the /metrics counter). */
  refused?: () => void;
  /** Where the rare WARNING goes; none: no line. */
  log?: Logger;
  logQuietMs?: number;
  /** For tests with app.request(): the peer address when there is no socket. */
  remoteAddress?: (c: Context) => string | undefined;
}

export type AuthFailureEnv = {
  /** authFailed: whose credential failed — the Authorization bearer's, or another one (a login form's). */
  Variables: { authFailed?: 'bearer' | 'other'; authAccepted?: string; authHeldBack?: () => Response };
};

const unlimited = (path: string) => path === '/healthz' || path === '/v1/echo';

/**
 * Marks the request as a failed authentication, to be counted against its address once it is answered.
 * Called by every place that refuses a credential (auth/middleware.ts, fleet/auth.ts, workers/http.ts)
 * for an `unauthenticated` or `forbidden` outcome; `unavailable` (the check itself could not run) is not
 * the caller's failure. A 401 counts even unmarked. `of`: whose credential it was — a known bearer that
 * came along with a login form that failed is still good, and stays known.
 */
export function noteAuthFailure(
  c: Context,
  code: Extract<AuthOutcome, { ok: false }>['code'],
  of: 'bearer' | 'other' = 'bearer',
): void {
  if (code !== 'unavailable') (c as Context<AuthFailureEnv>).set('authFailed', of);
}

/**
 * Marks the credential as accepted, to be remembered once the request is answered: called by every place
 * that accepts one (the same three), with the credential it checked — not when auth is off (local mode:
 * anything is accepted there, so nothing it accepts may become known).
 */
export function noteAuthSuccess(c: Context, credential: string | undefined): void {
  if (credential !== undefined) (c as Context<AuthFailureEnv>).set('authAccepted', credential);
}

/**
 * For a place that checks a credential other than the request's Authorization bearer (the fleet page's
 * login form and `?token=`): the 429 this limit held back because that bearer is known — the pass is the
 * bearer's alone, not a way to have other credentials checked past an empty bucket — or undefined.
 */
export function refusalHeldBack(c: Context): Response | undefined {
  return (c as Context<AuthFailureEnv>).get('authHeldBack')?.();
}

/** The middleware: mount it before everything else but the request id (app.ts). */
export function authFailureLimit(
  opts: AuthFailureLimitOptions,
): MiddlewareHandler & { limiter: RateLimiter; known: KnownCredentials } {
  const limiter = new RateLimiter(opts.now, opts.maxKeys, 'share-overflow');
  const known = new KnownCredentials(opts.maxKnownCredentials);
  const quietMs = opts.logQuietMs ?? AUTH_FAILURE_LOG_QUIET_MS;
  let loggedAt = Number.NEGATIVE_INFINITY;
  let quieted = 0;
  const tell = (key: string, retryAfterSeconds: number) => {
    const t = opts.now();
    if (t - loggedAt < quietMs) {
      quieted++;
      return;
    }
    opts.log?.warn('refusing requests from an address that failed authentication too often', {
      source: key,
      retryAfterSeconds,
      limit: `${opts.rate.perSecond}:${opts.rate.burst}`,
      refusedSinceLastLine: quieted,
    });
    loggedAt = t;
    quieted = 0;
  };
  const mw = createMiddleware<AuthFailureEnv>(async (c, next) => {
    if (unlimited(c.req.path)) return next();
    const peer = opts.remoteAddress ? opts.remoteAddress(c) : peerAddress(c);
    const key = sourceKey(clientAddress(c.req.header('x-forwarded-for'), opts.trustedHops, peer));
    const bearer = bearerToken(c.req.header('authorization'));
    const d = limiter.peek(key, opts.rate);
    if (!d.ok) {
      const refuse = () => {
        opts.refused?.();
        tell(d.shared ? 'overflow' : key, d.retryAfterSeconds);
        const body: ErrorBody = {
          error: 'rate_limited',
          message: `too many failed authentications from this address; retry after ${d.retryAfterSeconds} s`,
        };
        return c.json(body, 429, { 'Retry-After': String(d.retryAfterSeconds) });
      };
      if (bearer === undefined || !known.has(bearer)) return refuse();
      c.set('authHeldBack', refuse);
    }
    await next();
    const failed = c.get('authFailed');
    if (failed !== undefined || c.res.status === 401) {
      if (bearer !== undefined && failed !== 'other') known.forget(bearer);
      // Only a request that passed the bucket may leave it owing: one let through as known (the bucket
      // refused, !d.ok) takes what is there, nothing below it — else a known token's holder alternating a
      // refused use of it (a 403) with a good one could deepen the debt without end, and hold every
      // newcomer at that address out.
      if (!d.ok) limiter.take(key, opts.rate);
      else limiter.charge(key, opts.rate);
      return;
    }
    const accepted = c.get('authAccepted');
    if (accepted !== undefined) known.remember(accepted); // again: the most recently accepted go last
  });
  return Object.assign(mw, { limiter, known });
}
