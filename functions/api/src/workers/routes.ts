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
import type { WorkerAuthenticator } from './auth.js';
import { WorkerApiError, workerErrors } from './errors.js';
import { json, limitBytes, parseBody, rateLimit, requireWorker, type WorkerEnv } from './http.js';
import { type RateLimiter, WORKER_RATES } from './rate-limit.js';
import { reportOutcomes, reportRuntime } from './report-service.js';
import type { WorkerServiceDeps } from './service-deps.js';
import { acknowledgeSnapshot, latestSnapshot, registerWorker } from './session-service.js';
import type { SnapshotNames } from './snapshot-names.js';

export interface WorkerRoutesDeps extends WorkerServiceDeps {
  names: SnapshotNames;
  auth: WorkerAuthenticator;
  limiter: RateLimiter;
}

const KIB = 1024;

function workerIdOf(raw: string): string {
  const id = WorkerId.safeParse(raw);
  if (!id.success) throw new WorkerApiError(400, 'invalid_request', 'not a worker id');
  return id.data;
}

export function workerRoutes(deps: WorkerRoutesDeps) {
  const app = new Hono<WorkerEnv>();
  app.onError(workerErrors(deps.log));
  app.use('*', requireWorker(deps.auth));

  app.post('/register', limitBytes(4 * KIB), json(), async (c) => {
    rateLimit(deps.limiter, `register:${c.var.worker.label}`, WORKER_RATES.register);
    const body = await parseBody(c, RegisterRequestBody);
    return c.json(await registerWorker(deps, c.var.worker, body));
  });

  app.post('/:id/ack', limitBytes(4 * KIB), json(), async (c) => {
    const id = workerIdOf(c.req.param('id'));
    rateLimit(deps.limiter, `ack:${id}`, WORKER_RATES.ack);
    const body = await parseBody(c, AckRequestBody);
    return c.json(await acknowledgeSnapshot(deps, c.var.worker, id, body));
  });

  app.post('/:id/runtime', limitBytes(1024 * KIB), json(), async (c) => {
    const id = workerIdOf(c.req.param('id'));
    rateLimit(deps.limiter, `runtime:${id}`, WORKER_RATES.runtime);
    const body = await parseBody(c, RuntimeRequestBody);
    return c.json(await reportRuntime(deps, c.var.worker, id, body));
  });

  app.post('/:id/outcomes', limitBytes(1024 * KIB), json(), async (c) => {
    const id = workerIdOf(c.req.param('id'));
    rateLimit(deps.limiter, `outcomes:${id}`, WORKER_RATES.outcomes);
    const body = await parseBody(c, OutcomesRequestBody);
    return c.json(await reportOutcomes(deps, c.var.worker, id, body));
  });

  app.get('/:id/snapshot', async (c) => {
    const id = workerIdOf(c.req.param('id'));
    rateLimit(deps.limiter, `snapshot:${id}`, WORKER_RATES.snapshot);
    const sessionId = z.object({ sessionId: SessionId }).safeParse({ sessionId: c.req.query('sessionId') });
    if (!sessionId.success)
      throw new WorkerApiError(400, 'invalid_request', 'sessionId query parameter required');
    return c.json(await latestSnapshot(deps, c.var.worker, id, sessionId.data.sessionId));
  });

  return app;
}
