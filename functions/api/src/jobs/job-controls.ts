// What the /v1/jobs routes do: Cloud Scheduler's view of each job (through the JobScheduler port) joined
// with the run its function last recorded (JobRunStore), and the port's refusals as the API's stable codes.
import { withDeadline } from '../../../../shared/src/adapters/deadline.js';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import type { JobRun, JobRunStore } from '../../../../shared/src/ports/job-runs.js';
import {
  type JobScheduler,
  JobSchedulerError,
  type ScheduledJob,
} from '../../../../shared/src/ports/job-scheduler.js';
import { ApiError } from '../errors.js';
import type { JobBody } from './job-schemas.js';

export type JobAction = 'run' | 'pause' | 'resume';

export interface JobControlDeps {
  /** Absent when the service has no Cloud Scheduler to talk to (local mode without the scheduler). */
  scheduler: JobScheduler | null;
  runs: Pick<JobRunStore, 'get' | 'list'>;
  log: Logger;
}

const RETRY_SECONDS = 5;

/**
 * How long a route waits for the job runs (Firestore's jobRuns) before answering without them: 503
 * unavailable on a read, `lastRun: null` after an action. Unbounded, a stalled Firestore held
 * `POST …:run` — its tick already dispatched — until the CLI gave up at 30 s with "cannot reach", and the
 * operator ran it again: the second tick `outcome_unknown` exists to avoid (docs/operations-jobs.md
 * § Run now). An action's worst case: its two Cloud Scheduler calls (10 s each) + this = 25 s, inside the
 * CLI's 30 s.
 */
export const JOB_RUNS_READ_DEADLINE_MS = 5_000;

const bounded = <T>(read: Promise<T>, what: string): Promise<T> =>
  withDeadline(
    read,
    JOB_RUNS_READ_DEADLINE_MS,
    () => new Error(`${what}: no answer within ${JOB_RUNS_READ_DEADLINE_MS} ms`),
  );
const MAX_ECHO = 64;
const clip = (s: string) => (s.length > MAX_ECHO ? `${s.slice(0, MAX_ECHO)}…` : s);
const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toBody(job: ScheduledJob, run: JobRun | null): JobBody {
  return {
    name: job.id,
    resource: job.resource,
    description: job.description,
    schedule: job.schedule,
    timeZone: job.timeZone,
    state: job.state,
    lastAttemptTime: iso(job.lastAttemptTime),
    lastStatus: job.lastStatus,
    nextRunTime: iso(job.nextRunTime),
    lastRun: run && {
      startedAt: run.startedAt.toISOString(),
      finishedAt: iso(run.finishedAt),
      ok: run.ok,
      counts: run.counts,
      error: run.error,
    },
  };
}

export function jobControls({ scheduler, runs, log }: JobControlDeps) {
  const need = (): JobScheduler => {
    if (scheduler) return scheduler;
    throw new ApiError(
      503,
      'unavailable',
      'no Cloud Scheduler configured: set SCHEDULER_EMULATOR_HOST (npm start does) or run on GCP',
    );
  };

  const apiError = (err: unknown, name: string): unknown => {
    if (!(err instanceof JobSchedulerError)) return err;
    // The name comes from the path, unchecked: quoted back clipped, as every echo of input is (api.md).
    const id = clip(name);
    switch (err.kind) {
      case 'unknown_job':
        return new ApiError(404, 'unknown_job', `no job "${id}"`, {}, { cause: err });
      case 'paused':
        return new ApiError(409, 'job_paused', `job "${id}" is paused; resume it first`, {}, { cause: err });
      case 'refused':
        return new ApiError(409, 'conflict', err.message, {}, { cause: err });
      case 'denied':
        // The API's service account lacks the job-operator role: a deployment error, not the caller's.
        log.error('Cloud Scheduler refused the API service account', { job: id, error: err.message });
        return new ApiError(503, 'unavailable', 'Cloud Scheduler refused the service', {
          retryAfterSeconds: RETRY_SECONDS,
        });
      case 'outcome_unknown':
        // No Retry-After: a client that retries a short one (the CLI does, once) would dispatch a second
        // tick. The operator looks at the job first (docs/operations-jobs.md § Run now).
        return new ApiError(
          503,
          'outcome_unknown',
          `Cloud Scheduler's answer to running job "${id}" was lost: the tick may have been dispatched. Check its lastAttemptTime and lastRun (GET /v1/jobs/${id}) before running it again`,
          {},
          { cause: err },
        );
      default:
        return new ApiError(503, 'unavailable', 'Cloud Scheduler is unavailable; retry', {
          retryAfterSeconds: RETRY_SECONDS,
        });
    }
  };

  const runsUnreadable = (err: unknown) =>
    new ApiError(
      503,
      'unavailable',
      'job runs unreadable; retry',
      {
        retryAfterSeconds: RETRY_SECONDS,
      },
      { cause: err },
    );
  const lastRun = (id: string): Promise<JobRun | null> =>
    bounded(runs.get(id), 'reading the job run').catch((err: unknown) => Promise.reject(runsUnreadable(err)));

  return {
    /** `missing`: table jobs Cloud Scheduler does not have (not deployed here, or the wrong REGION). */
    async list(): Promise<{ jobs: JobBody[]; missing: string[] }> {
      const s = need();
      const [found, recorded] = await Promise.all([
        s.list().catch((err: unknown) => Promise.reject(apiError(err, '*'))),
        bounded(runs.list(), 'listing the job runs').catch((err: unknown) =>
          Promise.reject(runsUnreadable(err)),
        ),
      ]);
      if (found.missing.length > 0) {
        // Terraform deploys every row (test/terraform/jobs.test.ts): a gap is drift worth a look.
        log.warn('schedule table jobs missing from Cloud Scheduler', { missing: found.missing });
      }
      const byJob = new Map(recorded.map((r) => [r.job, r]));
      return {
        jobs: found.jobs.map((j) => toBody(j, byJob.get(j.id) ?? null)),
        missing: found.missing,
      };
    },

    async get(id: string): Promise<JobBody> {
      const s = need();
      const job = await s.get(id).catch((err: unknown) => Promise.reject(apiError(err, id)));
      return toBody(job, await lastRun(id));
    },

    async act(id: string, action: JobAction): Promise<JobBody> {
      const s = need();
      const job = await s[action](id).catch((err: unknown) => Promise.reject(apiError(err, id)));
      // Done once Cloud Scheduler answered: a 503 now would be retried (the CLI retries one) and publish
      // a second tick, and would tell the caller the action failed. The run record is only context.
      const run = await bounded(runs.get(id), 'reading the job run').catch((err: unknown) => {
        log.warn('job run unreadable after the action; answering lastRun null', {
          job: id,
          action,
          error: err instanceof Error ? err.message : String(err),
        });
        return null;
      });
      return toBody(job, run);
    },
  };
}

export type JobControls = ReturnType<typeof jobControls>;
