// Cloud Scheduler's refusals, kept as kinds so the REST front end maps them to Google's error shape.
export type SchedulerErrorKind = 'not_found' | 'failed_precondition';

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
