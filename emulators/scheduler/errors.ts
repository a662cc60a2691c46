// Cloud Scheduler's refusals, kept as kinds so the REST front end maps them to Google's error shape.
// `unavailable`: the scheduler is stopping (the local plane shuts down) and takes no more runs.
export type SchedulerErrorKind = 'not_found' | 'failed_precondition' | 'unavailable';

export class SchedulerError extends Error {
  constructor(
    readonly kind: SchedulerErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SchedulerError';
  }
}
