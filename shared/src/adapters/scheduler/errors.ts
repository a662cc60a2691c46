// What a Cloud Scheduler refusal means for the job operation that got it, by canonical code only
// (google-error-code.ts reads it from gRPC, REST and network errors alike; never by message text).
import { JobSchedulerError, type JobSchedulerErrorKind } from '../../ports/job-scheduler.js';
import { canonicalCode } from '../google-error-code.js';

/** What a refusal means for the operation that got it. */
export function toJobSchedulerError(
  err: unknown,
  op: 'read' | 'run' | 'change',
  id: string,
): JobSchedulerError {
  if (err instanceof JobSchedulerError) return err;
  const code = canonicalCode(err);
  let kind: JobSchedulerErrorKind = 'unavailable';
  if (code === 'NOT_FOUND') kind = 'unknown_job';
  else if (code === 'FAILED_PRECONDITION') kind = op === 'run' ? 'paused' : 'refused';
  else if (code === 'PERMISSION_DENIED' || code === 'UNAUTHENTICATED') kind = 'denied';
  const detail = err instanceof Error ? err.message : String(err);
  return new JobSchedulerError(kind, `Cloud Scheduler: ${code} for job ${id}: ${detail.slice(0, 300)}`, {
    cause: err,
  });
}
