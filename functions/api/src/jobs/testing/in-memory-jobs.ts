// Fakes for the /v1/jobs routes' unit tests (and the CLI's, which drives the same API): a JobScheduler
// that behaves as the port documents, with an injectable failure, and a JobRunStore in memory.
import type { JobRun, JobRunStore } from '../../../../../shared/src/ports/job-runs.js';
import {
  type JobScheduler,
  JobSchedulerError,
  type ScheduledJob,
} from '../../../../../shared/src/ports/job-scheduler.js';

export class InMemoryJobScheduler implements JobScheduler {
  readonly jobIds: readonly string[];
  readonly jobs = new Map<string, ScheduledJob>();
  readonly runs: string[] = [];
  /** Thrown by the next call (then cleared). */
  failNext: JobSchedulerError | undefined;

  constructor(
    ids: readonly string[],
    private readonly now: () => Date,
  ) {
    this.jobIds = ids;
    for (const id of ids) {
      this.jobs.set(id, {
        id,
        resource: `projects/p/locations/l/jobs/${id}`,
        description: `the ${id} job`,
        schedule: '* * * * *',
        timeZone: 'Etc/UTC',
        state: 'ENABLED',
        lastAttemptTime: null,
        lastStatus: null,
        nextRunTime: new Date(now().getTime() + 60_000),
      });
    }
  }

  private job(id: string): ScheduledJob {
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) throw failure;
    const job = this.jobs.get(id);
    if (!job) throw new JobSchedulerError('unknown_job', `no job ${id}`);
    return job;
  }

  async list() {
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) throw failure;
    const jobs = this.jobIds.flatMap((id) => {
      const job = this.jobs.get(id);
      return job ? [{ ...job }] : [];
    });
    return { jobs, missing: this.jobIds.filter((id) => !this.jobs.has(id)) };
  }
  async get(id: string) {
    return { ...this.job(id) };
  }
  async run(id: string) {
    const job = this.job(id);
    if (job.state === 'PAUSED') throw new JobSchedulerError('paused', `${id} is paused`);
    if (job.state !== 'ENABLED') throw new JobSchedulerError('refused', `${id} is ${job.state}`);
    this.runs.push(id);
    job.lastAttemptTime = this.now();
    job.lastStatus = { code: 'OK', message: '' };
    return { ...job };
  }
  async pause(id: string) {
    const job = this.job(id);
    job.state = 'PAUSED';
    job.nextRunTime = null;
    return { ...job };
  }
  async resume(id: string) {
    const job = this.job(id);
    job.state = 'ENABLED';
    job.nextRunTime = new Date(this.now().getTime() + 60_000);
    return { ...job };
  }
  async close() {}
}

export class InMemoryJobRuns implements Pick<JobRunStore, 'get' | 'list'> {
  readonly runs = new Map<string, JobRun>();
  failWith: Error | undefined;

  async get(job: string) {
    if (this.failWith) throw this.failWith;
    return this.runs.get(job) ?? null;
  }
  async list() {
    if (this.failWith) throw this.failWith;
    return [...this.runs.values()];
  }
}
