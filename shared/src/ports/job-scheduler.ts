// Operator controls over the plane's periodic jobs (issue 11): the rows of shared/topology/schedules.json
// as Cloud Scheduler runs them. Jobs are named by their table id (`gc-sweep`); the adapter maps ids to
// Cloud Scheduler resource names. Creating, changing and deleting jobs is Terraform's, never this port's.

/** Cloud Scheduler's Job.State names (google/cloud/scheduler/v1/job.proto). */
export type ScheduledJobState = 'STATE_UNSPECIFIED' | 'ENABLED' | 'PAUSED' | 'DISABLED' | 'UPDATE_FAILED';

/** The last attempt's google.rpc.Status, its code as the canonical name ("OK", "UNAVAILABLE", …). */
export interface AttemptStatus {
  code: string;
  message: string;
}

export interface ScheduledJob {
  /** The table id: `gc-sweep`. */
  id: string;
  /** projects/<p>/locations/<l>/jobs/<id> */
  resource: string;
  description: string;
  schedule: string;
  timeZone: string;
  state: ScheduledJobState;
  lastAttemptTime: Date | null;
  lastStatus: AttemptStatus | null;
  /** The next scheduled tick; null while paused. */
  nextRunTime: Date | null;
}

/**
 * unknown_job: not a job of the table, or Cloud Scheduler has no such job. paused: run refused because
 * the job is paused. refused: Cloud Scheduler refused the change for the job's state (FAILED_PRECONDITION).
 * denied: the caller's identity lacks the permission (a deployment error). unavailable: anything transient
 * that did nothing (safe to send again). outcome_unknown (run only): the run call failed after it may have
 * reached Cloud Scheduler — a deadline, a lost connection — so the tick may have been dispatched.
 */
export type JobSchedulerErrorKind =
  | 'unknown_job'
  | 'paused'
  | 'refused'
  | 'denied'
  | 'unavailable'
  | 'outcome_unknown';

export class JobSchedulerError extends Error {
  constructor(
    readonly kind: JobSchedulerErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'JobSchedulerError';
  }
}

export interface JobScheduler {
  /** The table's ids, in table order: the only jobs the other methods accept. */
  readonly jobIds: readonly string[];
  /** Every table job Cloud Scheduler has; a table job it lacks is left out (and reported by `missing`). */
  list(): Promise<{ jobs: ScheduledJob[]; missing: string[] }>;
  get(id: string): Promise<ScheduledJob>;
  /**
   * Dispatches the job's tick now; refused (`paused`) while the job is paused, and (`refused`) in any other
   * state but ENABLED (DISABLED, UPDATE_FAILED: states resume cannot leave).
   */
  run(id: string): Promise<ScheduledJob>;
  /** Idempotent: pausing a paused job answers the paused job. */
  pause(id: string): Promise<ScheduledJob>;
  /** Idempotent: resuming an enabled job answers the enabled job. */
  resume(id: string): Promise<ScheduledJob>;
  close(): Promise<void>;
}
