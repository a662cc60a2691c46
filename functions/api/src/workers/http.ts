// The pieces every worker route is made of: worker authentication (principal in c.var), a body limit per
// endpoint, a per-worker rate limit, and JSON validation with the API's issue format.
import type { Hook } from '@hono/zod-openapi';
import { createMiddleware } from 'hono/factory';
import { withRequestBudget } from '../../../../shared/src/adapters/deadline.js';
import { bearerToken } from '../auth/authenticator.js';
import { noteAuthFailure, noteAuthSuccess } from '../middleware/auth-failure-limit.js';
import { bodyLimit } from '../middleware/body-limit.js';
import { jsonBody } from '../middleware/json-body.js';
import { invalidInputMessage } from '../validation/hook.js';
import { toIssues } from '../validation/issues.js';
import type { WorkerAuthenticator, WorkerPrincipal } from './auth.js';
import { WorkerApiError } from './errors.js';
import type { RateLimiter, RateSpec } from './rate-limit.js';

export type WorkerEnv = { Variables: { worker: WorkerPrincipal; requestId: string } };

export const requireWorker = (auth: WorkerAuthenticator) =>
  createMiddleware<WorkerEnv>(async (c, next) => {
    const token = bearerToken(c.req.header('authorization'));
    const outcome = await auth.authenticate(token);
    if (outcome.ok) {
      c.set('worker', outcome.principal);
      // known from now on (auth on): its heartbeats pass a shared address's empty bucket
      if (!outcome.principal.open) noteAuthSuccess(c, token);
      return next();
    }
    // Counted against the caller's address (a worker's own limits are keyed by its id, after this).
    noteAuthFailure(c, outcome.code);
    if (outcome.code === 'forbidden') throw new WorkerApiError(403, 'forbidden', outcome.reason);
    if (outcome.code === 'unavailable') {
      throw new WorkerApiError(503, 'unavailable', outcome.reason, {}, { 'Retry-After': '5' });
    }
    throw new WorkerApiError(
      401,
      'unauthenticated',
      outcome.reason,
      {},
      {
        'WWW-Authenticate': 'Bearer realm="proxyplane-workers"',
      },
    );
  });

/**
 * The rest of the request run in a budget of `ms` (config.ts WORKER_REQUEST_BUDGET_MS): each store and
 * Pub/Sub call made in it is bounded by what is left (shared/src/adapters/deadline.ts budgeted), so calls in
 * a row cannot add up past it; one with nothing left answers as a call given up does (503 unavailable).
 */
export const requestBudget = (ms: number) =>
  createMiddleware<WorkerEnv>((_c, next) => withRequestBudget(ms, () => next()));

export const limitBytes = (maxSize: number) =>
  bodyLimit(
    maxSize,
    () =>
      new WorkerApiError(
        413,
        'payload_too_large',
        `request bodies here are limited to ${maxSize} bytes`,
        {},
        { Connection: 'close' },
      ),
  );

/** JSON body checks (media type, parse, depth, forbidden keys) before the schema sees it. */
export const json = jsonBody;

export function rateLimit(limiter: RateLimiter, key: string, spec: RateSpec): void {
  const d = limiter.take(key, spec);
  if (!d.ok) {
    throw new WorkerApiError(
      429,
      'rate_limited',
      'too many requests for this worker',
      {},
      {
        'Retry-After': String(d.retryAfterSeconds),
      },
    );
  }
}

// biome-ignore lint/suspicious/noExplicitAny: one hook serves routes of every input and env type
type AnyRouteHook = Hook<any, any, any, void>;

/**
 * The route validators' hook of the worker and gateway routes: a body, query or header that fails its
 * schema is 400 invalid_request, named as on every other route ("invalid request body", "invalid query
 * string", "invalid request header") with the issues; a path parameter that fails its own is `pathMessage`
 * (the routes' one 400 for it).
 */
export const workerHook =
  (pathMessage: string): AnyRouteHook =>
  (result) => {
    if (result.success) return;
    if (result.target === 'param') throw new WorkerApiError(400, 'invalid_request', pathMessage);
    // Named by what failed, as on every other route (a malformed If-Match is a request header).
    throw new WorkerApiError(400, 'invalid_request', invalidInputMessage(result.target), {
      issues: toIssues(result.error),
    });
  };
