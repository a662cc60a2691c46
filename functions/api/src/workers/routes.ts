// The worker-facing routes (docs/gateway-control-plane.md). Every one authenticates the worker identity,
// checks that it may act for the worker id, bounds body and rate, validates strictly, then runs the
// contract's rule in the service and answers with its stable code. The route definitions, and so
// /openapi.json, are in worker-openapi.ts.
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { WorkerId } from '../../../../shared/src/messages/gateway-snapshot.js';
import { noteAuthFailure } from '../middleware/auth-failure-limit.js';
import { noBody } from '../middleware/no-body.js';
import { noQuery } from '../middleware/no-query.js';
import type { WorkerAuthenticator } from './auth.js';
import { WORKER_REQUEST_BUDGET_MS } from './config.js';
import { WorkerApiError, workerErrors } from './errors.js';
import {
  json,
  limitBytes,
  rateLimit,
  requestBudget,
  requireWorker,
  type WorkerEnv,
  workerHook,
} from './http.js';
import { type RateLimiter, WORKER_RATES } from './rate-limit.js';
import { reportOutcomes, reportRuntime } from './report-service.js';
import { authorise, type WorkerServiceDeps } from './service-deps.js';
import { acknowledgeSnapshot, latestSnapshot, registerWorker } from './session-service.js';
import type { SnapshotNames } from './snapshot-names.js';
import {
  ackRoute,
  outcomesRoute,
  registerRoute,
  runtimeRoute,
  SnapshotQuery,
  snapshotRoute,
} from './worker-openapi.js';

export interface WorkerRoutesDeps extends WorkerServiceDeps {
  names: SnapshotNames;
  auth: WorkerAuthenticator;
  limiter: RateLimiter;
  /** Replaces WORKER_REQUEST_BUDGET_MS (tests). */
  requestBudgetMs?: number;
}

const KIB = 1024;
const NOT_A_WORKER_ID = 'not a worker id';

/**
 * authorise() for the request's caller, its refusal counted against the caller's address as a failed
 * authentication (a valid credential that may not be used there, as an admin route counts a crawler
 * token): it comes before any worker's bucket is taken, so nothing else would limit it.
 */
function mayActFor(c: Context<WorkerEnv>, workerId: string): void {
  try {
    authorise(c.var.worker, workerId);
  } catch (err) {
    noteAuthFailure(c, 'forbidden');
    throw err;
  }
}

/** The path's worker id, once the caller is known to be allowed it: only then may it take that worker's bucket. */
function workerIdOf(c: Context<WorkerEnv>): string {
  const id = WorkerId.safeParse(c.req.param('id') ?? '');
  if (!id.success) throw new WorkerApiError(400, 'invalid_request', NOT_A_WORKER_ID);
  mayActFor(c, id.data);
  return id.data;
}

export function workerRoutes(deps: WorkerRoutesDeps) {
  const app = new OpenAPIHono<WorkerEnv>({ defaultHook: workerHook(NOT_A_WORKER_ID) });
  app.onError(workerErrors(deps.log));
  // First, so the budget counts from the request's start, as the gateway's own timeout does.
  app.use('*', requestBudget(deps.requestBudgetMs ?? WORKER_REQUEST_BUDGET_MS));
  app.use('*', requireWorker(deps.auth));

  /** The path's worker id checked and its bucket taken, before the body is judged (so in front of the
   *  route's validators). */
  const forWorker = (endpoint: 'ack' | 'runtime' | 'outcomes' | 'snapshot') =>
    createMiddleware<WorkerEnv>(async (c, next) => {
      const id = workerIdOf(c);
      rateLimit(deps.limiter, `${endpoint}:${id}`, WORKER_RATES[endpoint]);
      await next();
    });

  // Keyed by caller AND worker id: on GCP every gateway presents the one gateway service account, so a
  // key of the caller alone made the whole fleet share one register bucket per API instance (a fleet
  // restart was throttled to 1/s). The body is read first (4 KiB at most) and the caller must be allowed
  // the id before a bucket is taken, so no one can drain another worker's bucket or mint buckets.
  app.openapi(
    { ...registerRoute, middleware: [limitBytes(4 * KIB), noQuery(), json()] as const },
    async (c) => {
      const body = c.req.valid('json');
      mayActFor(c, body.workerId);
      rateLimit(deps.limiter, `register:${c.var.worker.label}:${body.workerId}`, WORKER_RATES.register);
      return c.json(await registerWorker(deps, c.var.worker, body), 200);
    },
  );

  app.openapi(
    { ...ackRoute, middleware: [limitBytes(4 * KIB), noQuery(), json(), forWorker('ack')] as const },
    async (c) => {
      const { id } = c.req.valid('param');
      return c.json(await acknowledgeSnapshot(deps, c.var.worker, id, c.req.valid('json')), 200);
    },
  );

  app.openapi(
    {
      ...runtimeRoute,
      middleware: [limitBytes(1024 * KIB), noQuery(), json(), forWorker('runtime')] as const,
    },
    async (c) => {
      const { id } = c.req.valid('param');
      return c.json(await reportRuntime(deps, c.var.worker, id, c.req.valid('json')), 200);
    },
  );

  app.openapi(
    {
      ...outcomesRoute,
      middleware: [limitBytes(1024 * KIB), noQuery(), json(), forWorker('outcomes')] as const,
    },
    async (c) => {
      const { id } = c.req.valid('param');
      return c.json(await reportOutcomes(deps, c.var.worker, id, c.req.valid('json')), 200);
    },
  );

  // Documented, not validated by the route's query validator: that one folds a repeated sessionId into an
  // array and refuses it, where this route has always read the first value.
  app.openAPIRegistry.registerPath(snapshotRoute);
  // A body is refused (400 unexpected_body), not ignored, as on every admin GET; after the bucket is
  // taken, so that refusals spend it too, and bounded first (these routes skip the app's body limit).
  app.get('/:id/snapshot', forWorker('snapshot'), limitBytes(KIB), noBody(), async (c) => {
    const id = c.req.param('id');
    const sessionId = SnapshotQuery.safeParse({ sessionId: c.req.query('sessionId') });
    if (!sessionId.success)
      throw new WorkerApiError(400, 'invalid_request', 'sessionId query parameter required');
    return c.json(await latestSnapshot(deps, c.var.worker, id, sessionId.data.sessionId));
  });

  return app;
}
