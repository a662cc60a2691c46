// JobScheduler on Cloud Scheduler through @google-cloud/scheduler: the real API on GCP, the local
// scheduler's REST subset under `npm start` and in tests. Only the table's jobs are reachable: any other
// id is unknown_job before a request is made, so the API's credentials never touch another job.
import type { CloudSchedulerClient, protos } from '@google-cloud/scheduler';
import { type JobScheduler, JobSchedulerError, type ScheduledJob } from '../../ports/job-scheduler.js';
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
}

export class CloudSchedulerJobs implements JobScheduler {
  readonly jobIds: readonly string[];
  private readonly at: JobLocation;
  private readonly client: SchedulerClient;

  constructor(opts: CloudSchedulerJobsOptions) {
    this.jobIds = [...opts.jobIds];
    this.at = { projectId: opts.projectId, location: opts.location };
    this.client = opts.client;
  }

  async list(): Promise<{ jobs: ScheduledJob[]; missing: string[] }> {
    let found: protos.google.cloud.scheduler.v1.IJob[];
    try {
      // autoPaginate (the default) follows nextPageToken: every job of the location.
      [found] = await this.client.listJobs({ parent: jobsParent(this.at) });
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
    return this.call(id, 'read', (name) => this.client.getJob({ name }));
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
    return this.call(id, 'run', (name) => this.client.runJob({ name }));
  }

  pause(id: string): Promise<ScheduledJob> {
    return this.idempotent(id, 'PAUSED', (name) => this.client.pauseJob({ name }));
  }

  resume(id: string): Promise<ScheduledJob> {
    return this.idempotent(id, 'ENABLED', (name) => this.client.resumeJob({ name }));
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

  private async call(
    id: string,
    op: 'read' | 'run' | 'change',
    rpc: (name: string) => Promise<readonly [unknown, ...unknown[]]>,
  ): Promise<ScheduledJob> {
    if (!this.jobIds.includes(id)) {
      throw new JobSchedulerError('unknown_job', `no job "${id}" in shared/topology/schedules.json`);
    }
    try {
      const [job] = await rpc(jobResourceName(this.at, id));
      return toScheduledJob(id, job as protos.google.cloud.scheduler.v1.IJob);
    } catch (err) {
      throw toJobSchedulerError(err, op, id);
    }
  }
}
