// What a Cloud Scheduler refusal means for the job operation that got it, by canonical code only
// (google-error-code.ts reads it from gRPC, REST and network errors alike; never by message text).
import { JobSchedulerError, type JobSchedulerErrorKind } from '../../ports/job-scheduler.js';
import { canonicalCode } from '../google-error-code.js';

/**
 * Codes by which Cloud Scheduler refused a call without acting on it (google.rpc.Code: the request was
 * judged and turned down). Any other failure of a run — DEADLINE_EXCEEDED ("may be returned even if the
 * operation has completed successfully"), UNAVAILABLE (gRPC says it is not always safe to retry a
 * non-idempotent call after it), CANCELLED, INTERNAL, UNKNOWN, a reset connection — may come after the
 * tick was dispatched: RunJob is not idempotent (gax does not retry it either), so it is no blip to retry.
 */
const REFUSED_UNDONE = new Set([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
]);

/** Socket errors of a request that never left: no connection, no address (the REST transport's). */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function mayHaveRun(err: unknown, code: string): boolean {
  const errno = (err as { code?: unknown } | null)?.code;
  if (typeof errno === 'string' && NOT_SENT.has(errno)) return false;
  return !REFUSED_UNDONE.has(code);
}

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
  else if (op === 'run' && mayHaveRun(err, code)) kind = 'outcome_unknown';
  const detail = err instanceof Error ? err.message : String(err);
  return new JobSchedulerError(kind, `Cloud Scheduler: ${code} for job ${id}: ${detail.slice(0, 300)}`, {
    cause: err,
  });
}
