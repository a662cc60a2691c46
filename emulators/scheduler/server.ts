// The Cloud Scheduler REST subset operators use through @google-cloud/scheduler (jobs list, get, run,
// pause, resume), served from the LocalScheduler on the firebase.json `scheduler` port. Jobs come from
// shared/topology/schedules.json (Terraform owns them on GCP), so create/update/delete are UNIMPLEMENTED.
// Errors use Google's error shape, not the house `{error: code}`, because the client parses them.
import type { Server } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { listenOn } from '../../shared/src/adapters/listen.js';
import { jsonLineLog } from '../compute/log.js';
import { foreignCaller } from '../launcher/local-caller.js';
import { SchedulerError } from './errors.js';
import type { LocalScheduler } from './local-scheduler.js';
import { type GoogleErrorKind, googleError, type ResourceContext, toRestJob } from './rest-shapes.js';

export interface SchedulerAppOptions {
  projectId: string;
  location: string;
}

function fail(c: Context, kind: GoogleErrorKind, message: string) {
  const { http, body } = googleError(kind, message);
  return c.json(body, http);
}

export function createSchedulerApp(scheduler: LocalScheduler, opts: SchedulerAppOptions) {
  const app = new Hono();
  const base = '/v1/projects/:project/locations/:location/jobs';

  // The parent in the URL must be ours; another project's or region's job does not exist here.
  const context = (c: Context): ResourceContext | undefined => {
    if (c.req.param('project') !== opts.projectId || c.req.param('location') !== opts.location)
      return undefined;
    return { ...opts, intEnums: (c.req.query('$alt') ?? '').includes('enum-encoding=int') };
  };

  // Anything on this machine may call it; a web page open in the developer's browser may not (local-caller.ts).
  app.use(async (c, next) => {
    const foreign = foreignCaller({ host: c.req.header('host'), origin: c.req.header('origin') });
    if (foreign)
      return c.json(
        { error: { code: 403, status: 'PERMISSION_DENIED', message: `Emulator: ${foreign}.` } },
        403,
      );
    await next();
  });

  app.onError((err, c) => {
    if (err instanceof SchedulerError) return fail(c, err.kind, err.message);
    return fail(c, 'unavailable', err instanceof Error ? err.message : String(err));
  });

  app.get(base, (c) => {
    const ctx = context(c);
    if (!ctx) return c.json({ jobs: [] });
    return c.json({ jobs: scheduler.list().map((v) => toRestJob(v, ctx)) });
  });

  app.get(`${base}/:job`, (c) => {
    const ctx = context(c);
    if (!ctx) return fail(c, 'not_found', `job ${c.req.param('job')} not found`);
    return c.json(toRestJob(scheduler.get(c.req.param('job')), ctx));
  });

  // `…/jobs/<id>:run|:pause|:resume` (custom methods, https://cloud.google.com/apis/design/custom_methods).
  app.post(`${base}/:jobVerb`, (c) => {
    const [id = '', verb, ...rest] = c.req.param('jobVerb').split(':');
    const ctx = context(c);
    if (rest.length > 0 || verb === undefined)
      return fail(c, 'unimplemented', 'only :run, :pause and :resume');
    if (!ctx) return fail(c, 'not_found', `job ${id} not found`);
    if (verb === 'pause') return c.json(toRestJob(scheduler.pause(id), ctx));
    if (verb === 'resume') return c.json(toRestJob(scheduler.resume(id), ctx));
    if (verb !== 'run') return fail(c, 'unimplemented', `:${verb} is not supported`);
    // Cloud Scheduler answers run with the job and dispatches it; the attempt's outcome lands in `status`.
    return c.json(toRestJob(scheduler.run(id), ctx));
  });

  app.all('*', (c) =>
    fail(
      c,
      'unimplemented',
      `${c.req.method} ${c.req.path}: jobs are managed in shared/topology/schedules.json`,
    ),
  );
  return app;
}

const log = jsonLineLog('scheduler-emulator', (line) => process.stderr.write(line));

export interface SchedulerServer {
  url: string;
  stop(): Promise<void>;
}

export async function startSchedulerServer(
  scheduler: LocalScheduler,
  opts: SchedulerAppOptions & { host: string; port: number },
): Promise<SchedulerServer> {
  const app = createSchedulerApp(scheduler, opts);
  const server = createAdaptorServer({ fetch: app.fetch, hostname: opts.host });
  await listenOn(server as Server, opts.port, opts.host, (err) =>
    log('ERROR', 'scheduler emulator listener error', { error: err.message }),
  );
  return {
    url: `http://${opts.host}:${opts.port}`,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        // Keep-alive connections of a client would otherwise hold close() open.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
