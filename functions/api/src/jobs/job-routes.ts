// /v1/jobs: list and read the periodic jobs, run one now, pause and resume it (docs/operations-jobs.md).
// The actions are Google custom methods (`/v1/jobs/gc-sweep:run`, as Cloud Scheduler spells them), which
// Hono's path syntax cannot express as a parameter plus a literal, so one POST route splits the segment;
// their OpenAPI entries are registered by hand.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../errors.js';
import { noBody } from '../middleware/no-body.js';
import { noQuery } from '../middleware/no-query.js';
import { adminResponses, error, json } from '../routes/openapi-responses.js';
import { validationHook } from '../validation/hook.js';
import type { JobAction, JobControls } from './job-controls.js';
import { JobBody, JobList, JobNameParam } from './job-schemas.js';

const ACTIONS: Record<JobAction, string> = {
  run: 'Run the job now: Cloud Scheduler publishes its tick at once; the schedule is unchanged',
  pause: 'Pause the job: no tick is published until it is resumed (idempotent)',
  resume: 'Resume a paused job on its schedule (idempotent)',
};
const isAction = (v: string): v is JobAction => Object.hasOwn(ACTIONS, v);

const common = adminResponses('Cloud Scheduler or Firestore unavailable');

const listJobsRoute = createRoute({
  method: 'get',
  path: '/',
  summary: 'List the periodic jobs',
  middleware: [noQuery(), noBody()] as const,
  responses: {
    200: json(JobList, 'Every job of schedules.json that Cloud Scheduler has'),
    400: error('invalid_request: a body or a query parameter was sent'),
    ...common,
  },
});

const getJobRoute = createRoute({
  method: 'get',
  path: '/{name}',
  summary: 'Get a periodic job',
  middleware: [noQuery(), noBody()] as const,
  request: { params: JobNameParam },
  responses: {
    200: json(JobBody, 'The job'),
    400: error('invalid_request: a body or a query parameter was sent'),
    404: error('unknown_job'),
    ...common,
  },
});

export function jobRoutes(controls: JobControls) {
  const app = new OpenAPIHono({ defaultHook: validationHook })
    .openapi(listJobsRoute, async (c) => {
      const { jobs, missing } = await controls.list();
      return c.json({ jobs, count: jobs.length, missing }, 200);
    })
    .openapi(getJobRoute, async (c) => c.json(await controls.get(c.req.valid('param').name), 200));

  // The action is read before the query and the body are judged, so that a call of no action —
  // `POST /v1/jobs/gc-sweep`, `…:delete` — is 404 not_found whatever was sent with it (it was 400
  // unexpected_body with a body, 404 without).
  const route = (call: string) => {
    const at = call.lastIndexOf(':');
    const action = at > 0 ? call.slice(at + 1) : '';
    if (!isAction(action)) throw new ApiError(404, 'not_found', 'no such route');
    return { name: call.slice(0, at), action };
  };
  const routed = createMiddleware(async (c, next) => {
    route(c.req.param('call') ?? '');
    await next();
  });
  app.post('/:call', routed, noQuery(), noBody(), async (c) => {
    const { name, action } = route(c.req.param('call'));
    return c.json(await controls.act(name, action), 200);
  });

  for (const [action, summary] of Object.entries(ACTIONS)) {
    app.openAPIRegistry.registerPath({
      method: 'post',
      path: `/{name}:${action}`,
      summary,
      request: { params: JobNameParam },
      responses: {
        200: json(JobBody, 'The job'),
        400: error('invalid_request: a body or a query parameter was sent'),
        404: error('unknown_job'),
        ...(action === 'run'
          ? { 409: error('job_paused: resume it first; conflict: the job is DISABLED or UPDATE_FAILED') }
          : {}),
        ...(action !== 'run' ? { 409: error("conflict: Cloud Scheduler refused the job's state") } : {}),
        ...common,
        ...(action === 'run'
          ? {
              503: error(
                'unavailable: Cloud Scheduler or Firestore unavailable, nothing dispatched; see Retry-After. outcome_unknown (no Retry-After): the run call failed after it may have dispatched the tick; check the job before running it again',
              ),
            }
          : {}),
      },
    });
  }
  return app;
}
