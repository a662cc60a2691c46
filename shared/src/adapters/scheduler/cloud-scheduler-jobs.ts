// JobScheduler on Cloud Scheduler through @google-cloud/scheduler: the real API on GCP, the local
// scheduler's REST subset under `npm start` and in tests. Only the table's jobs are reachable: any other
// id is unknown_job before a request is made, so the API's credentials never touch another job.
import type { CloudSchedulerClient, protos } from '@google-cloud/scheduler';
import { type JobScheduler, JobSchedulerError, type ScheduledJob } from '../../ports/job-scheduler.js';
import { withDeadline } from '../deadline.js';
import { toJobSchedulerError } from './errors.js';
import { type JobLocation, jobIdOf, jobResourceName, jobsParent } from './job-names.js';
import { toScheduledJob } from './job-view.js';

export type SchedulerClient = Pick<
  CloudSchedulerClient,
  'listJobs' | 'getJob' | 'runJob' | 'pauseJob' | 'resumeJob' | 'close'
>;

/**
 * The IAM permission each operation needs (Cloud Scheduler REST reference: resume is
 * cloudscheduler.jobs.enable). terraform/iam.tf's job_operator role holds exactly these.
 */
export const SCHEDULER_PERMISSIONS = {
  list: 'cloudscheduler.jobs.list',
  get: 'cloudscheduler.jobs.get',
  run: 'cloudscheduler.jobs.run',
  pause: 'cloudscheduler.jobs.pause',
  resume: 'cloudscheduler.jobs.enable',
} as const satisfies Record<Exclude<keyof JobScheduler, 'jobIds' | 'close'>, string>;

export interface CloudSchedulerJobsOptions extends JobLocation {
  /** The ids of shared/topology/schedules.json (`Object.keys(loadScheduleTable().jobs)`). */
  jobIds: readonly string[];
  client: SchedulerClient;
  /** Each call's deadline (default SCHEDULER_CALL_TIMEOUT_MS). */
  callTimeoutMs?: number;
}

/**
 * How long one Cloud Scheduler call may take: the client library's default for these methods is 600 s, so
 * a hung call held an operator's `jobs` request (and the CLI) until Cloud Run's 300 s request timeout cut
 * it. Past it a read is `unavailable` (retried), a run `outcome_unknown` (the tick may have gone out). A
 * run makes two calls (its state, then the run): both end within the CLI's own request timeout
 * (cli/http.ts CLI_REQUEST_TIMEOUT_MS), so the CLI hears which it was.
 */
export const SCHEDULER_CALL_TIMEOUT_MS = 10_000;

/** google.rpc.Code DEADLINE_EXCEEDED, as a gRPC error carries it. */
const GRPC_DEADLINE_EXCEEDED = 4;

export class CloudSchedulerJobs implements JobScheduler {
  readonly jobIds: readonly string[];
  private readonly at: JobLocation;
  private readonly client: SchedulerClient;
  /** gax call options: each call's deadline (gRPC; the REST transport ignores it, so `bounded` too). */
  private readonly options: { timeout: number };

  constructor(opts: CloudSchedulerJobsOptions) {
    this.jobIds = [...opts.jobIds];
    this.at = { projectId: opts.projectId, location: opts.location };
    this.client = opts.client;
    this.options = { timeout: opts.callTimeoutMs ?? SCHEDULER_CALL_TIMEOUT_MS };
  }

  async list(): Promise<{ jobs: ScheduledJob[]; missing: string[] }> {
    let found: protos.google.cloud.scheduler.v1.IJob[];
    try {
      // autoPaginate (the default) follows nextPageToken: every job of the location.
      [found] = await this.bounded(this.client.listJobs({ parent: jobsParent(this.at) }, this.options));
    } catch (err) {
      throw toJobSchedulerError(err, 'read', '*');
    }
    const byId = new Map<string, ScheduledJob>();
    for (const job of found) {
      const id = jobIdOf(this.at, job.name ?? '');
      if (id !== null && this.jobIds.includes(id)) byId.set(id, toScheduledJob(id, job));
    }
    return {
      jobs: this.jobIds.flatMap((id) => byId.get(id) ?? []),
      missing: this.jobIds.filter((id) => !byId.has(id)),
    };
  }

  get(id: string): Promise<ScheduledJob> {
    return this.call(id, 'read', (name) => this.client.getJob({ name }, this.options));
  }

  async run(id: string): Promise<ScheduledJob> {
    // Refused here too, so the answer is the same whether or not a Cloud Scheduler version dispatches a
    // paused job: paused means no tick reaches the function until an operator resumes it.
    const current = await this.get(id);
    if (current.state === 'PAUSED') {
      throw new JobSchedulerError('paused', `job ${id} is paused; resume it first`);
    }
    // DISABLED / UPDATE_FAILED are the system's states, which resume cannot leave: answering "paused,
    // resume it first" would send the operator to a resume that is refused in turn.
    if (current.state !== 'ENABLED') {
      throw new JobSchedulerError(
        'refused',
        `job ${id} is ${current.state}, not ENABLED: resume cannot change that (see terraform/scheduler.tf)`,
      );
    }
    return this.call(id, 'run', (name) => this.client.runJob({ name }, this.options));
  }

  pause(id: string): Promise<ScheduledJob> {
    return this.idempotent(id, 'PAUSED', (name) => this.client.pauseJob({ name }, this.options));
  }

  resume(id: string): Promise<ScheduledJob> {
    return this.idempotent(id, 'ENABLED', (name) => this.client.resumeJob({ name }, this.options));
  }

  close(): Promise<void> {
    return this.client.close();
  }

  // Cloud Scheduler documents pause as needing an ENABLED job and resume a PAUSED one
  // (FAILED_PRECONDITION otherwise); an operator repeating a command must not see an error for a job
  // already where they want it.
  private async idempotent(
    id: string,
    wanted: ScheduledJob['state'],
    change: (name: string) => Promise<readonly [unknown, ...unknown[]]>,
  ): Promise<ScheduledJob> {
    try {
      return await this.call(id, 'change', change);
    } catch (err) {
      if (!(err instanceof JobSchedulerError) || err.kind !== 'refused') throw err;
      const current = await this.get(id);
      if (current.state === wanted) return current;
      throw err;
    }
  }

  /** A call past its deadline fails DEADLINE_EXCEEDED, whichever transport carries it. */
  private bounded<T>(work: Promise<T>): Promise<T> {
    const ms = this.options.timeout;
    return withDeadline(work, ms, () =>
      Object.assign(new Error(`Cloud Scheduler did not answer in ${ms} ms`), {
        code: GRPC_DEADLINE_EXCEEDED,
      }),
    );
  }

  private async call(
    id: string,
    op: 'read' | 'run' | 'change',
    rpc: (name: string) => Promise<readonly [unknown, ...unknown[]]>,
  ): Promise<ScheduledJob> {
    if (!this.jobIds.includes(id)) {
      throw new JobSchedulerError('unknown_job', `no job "${id}" in shared/topology/schedules.json`);
    }
    try {
      const [job] = await this.bounded(rpc(jobResourceName(this.at, id)));
      return toScheduledJob(id, job as protos.google.cloud.scheduler.v1.IJob);
    } catch (err) {
      throw toJobSchedulerError(err, op, id);
    }
  }
}
