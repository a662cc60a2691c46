// The worker-facing routes (docs/gateway-control-plane.md). Every one authenticates the worker identity,
// checks that it may act for the worker id, bounds body and rate, validates strictly, then runs the
// contract's rule in the service and answers with its stable code.
import { Hono } from 'hono';
import { z } from 'zod';
import { WorkerId } from '../../../../shared/src/messages/gateway-snapshot.js';
import {
  AckRequestBody,
  OutcomesRequestBody,
  RegisterRequestBody,
  RuntimeRequestBody,
  SessionId,
} from '../../../../shared/src/messages/worker-api.js';
import type { WorkerAuthenticator, WorkerPrincipal } from './auth.js';
import { WorkerApiError, workerErrors } from './errors.js';
import { json, limitBytes, parseBody, rateLimit, requireWorker, type WorkerEnv } from './http.js';
import { type RateLimiter, WORKER_RATES } from './rate-limit.js';
import { reportOutcomes, reportRuntime } from './report-service.js';
import { authorise, type WorkerServiceDeps } from './service-deps.js';
import { acknowledgeSnapshot, latestSnapshot, registerWorker } from './session-service.js';
import type { SnapshotNames } from './snapshot-names.js';

export interface WorkerRoutesDeps extends WorkerServiceDeps {
  names: SnapshotNames;
  auth: WorkerAuthenticator;
  limiter: RateLimiter;
}

const KIB = 1024;

/** The path's worker id, once the caller is known to be allowed it: only then may it take that worker's bucket. */
function workerIdOf(raw: string, caller: WorkerPrincipal): string {
  const id = WorkerId.safeParse(raw);
  if (!id.success) throw new WorkerApiError(400, 'invalid_request', 'not a worker id');
  authorise(caller, id.data);
  return id.data;
}

export function workerRoutes(deps: WorkerRoutesDeps) {
  const app = new Hono<WorkerEnv>();
  app.onError(workerErrors(deps.log));
  app.use('*', requireWorker(deps.auth));

  // Keyed by caller AND worker id: on GCP every gateway presents the one gateway service account, so a
  // key of the caller alone made the whole fleet share one register bucket per API instance (a fleet
  // restart was throttled to 1/s). The body is read first (4 KiB at most) and the caller must be allowed
  // the id before a bucket is taken, so no one can drain another worker's bucket or mint buckets.
  app.post('/register', limitBytes(4 * KIB), json(), async (c) => {
    const body = await parseBody(c, RegisterRequestBody);
    authorise(c.var.worker, body.workerId);
    rateLimit(deps.limiter, `register:${c.var.worker.label}:${body.workerId}`, WORKER_RATES.register);
    return c.json(await registerWorker(deps, c.var.worker, body));
  });

  app.post('/:id/ack', limitBytes(4 * KIB), json(), async (c) => {
    const id = workerIdOf(c.req.param('id'), c.var.worker);
    rateLimit(deps.limiter, `ack:${id}`, WORKER_RATES.ack);
    const body = await parseBody(c, AckRequestBody);
    return c.json(await acknowledgeSnapshot(deps, c.var.worker, id, body));
  });

  app.post('/:id/runtime', limitBytes(1024 * KIB), json(), async (c) => {
    const id = workerIdOf(c.req.param('id'), c.var.worker);
    rateLimit(deps.limiter, `runtime:${id}`, WORKER_RATES.runtime);
    const body = await parseBody(c, RuntimeRequestBody);
    return c.json(await reportRuntime(deps, c.var.worker, id, body));
  });

  app.post('/:id/outcomes', limitBytes(1024 * KIB), json(), async (c) => {
    const id = workerIdOf(c.req.param('id'), c.var.worker);
    rateLimit(deps.limiter, `outcomes:${id}`, WORKER_RATES.outcomes);
    const body = await parseBody(c, OutcomesRequestBody);
    return c.json(await reportOutcomes(deps, c.var.worker, id, body));
  });

  app.get('/:id/snapshot', async (c) => {
    const id = workerIdOf(c.req.param('id'), c.var.worker);
    rateLimit(deps.limiter, `snapshot:${id}`, WORKER_RATES.snapshot);
    const sessionId = z.object({ sessionId: SessionId }).safeParse({ sessionId: c.req.query('sessionId') });
    if (!sessionId.success)
      throw new WorkerApiError(400, 'invalid_request', 'sessionId query parameter required');
    return c.json(await latestSnapshot(deps, c.var.worker, id, sessionId.data.sessionId));
  });

  return app;
}
