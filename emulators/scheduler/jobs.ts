// The scheduler's jobs, built from shared/topology/schedules.json: the same table Terraform turns into
// Cloud Scheduler jobs with a Pub/Sub target, so local ticks carry exactly the bytes GCP would send.
import type { ScheduleTable } from '../../shared/src/config/topology.js';

export type JobState = 'ENABLED' | 'PAUSED';

export interface SchedulerJob {
  /** Job id (the last segment of projects/<p>/locations/<l>/jobs/<id>). */
  id: string;
  description: string;
  /** The GCP cron expression; locally the job fires every `everySeconds` instead. */
  schedule: string;
  timeZone: string;
  everySeconds: number;
  topic: string;
  /** The Pub/Sub target's data: the table's `data` as JSON, never empty. */
  data: Buffer;
  attributes: Record<string, string>;
}

/** google.rpc.Status of the last attempt: code 0 = OK. */
export interface AttemptStatus {
  code: number;
  message?: string;
}

export interface JobView extends SchedulerJob {
  state: JobState;
  userUpdateTime: Date;
  lastAttemptTime?: Date;
  lastStatus?: AttemptStatus;
  /** When the local loop fires it next (absent while paused or when the loop is not running). */
  scheduleTime?: Date;
}

type TableJob = ScheduleTable['jobs'][string] & { attributes?: Record<string, string> };

export function jobsFromTable(table: ScheduleTable): SchedulerJob[] {
  return Object.entries(table.jobs).map(([id, job]: [string, TableJob]) => ({
    id,
    description: job.description,
    schedule: job.schedule,
    timeZone: table.timeZone,
    everySeconds: job.localEverySeconds,
    topic: job.topic,
    data: Buffer.from(JSON.stringify(job.data)),
    attributes: { ...job.attributes },
  }));
}
