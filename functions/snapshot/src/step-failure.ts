// A worker's failed snapshot step: whether a retry can help, and which message retries it. Permanent is
// what the same step meets again on every retry: a snapshot the publisher refuses as such (over its 9 MiB,
// or out of its schema: PublishError `invalid_payload`), a stored document that no longer fits (`invalid`:
// fixed by hand, not by time). A redelivery for one of those runs a whole pass for nothing; the next tick
// tries again anyway, and logs it again. Not a write Firestore refuses (WorkerStoreError `rejected`,
// INVALID_ARGUMENT): a commit past its size limit is one, but so is a transaction that expired while it
// stalled, which the next attempt gets through — and a retry's cost is bounded (a worker session's TTL).
import { PublishError } from '../../../shared/src/ports/publish-error.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';

export function permanentStepFailure(err: unknown): boolean {
  if (err instanceof PublishError) return err.kind === 'invalid_payload';
  if (err instanceof WorkerStoreError) return err.kind === 'invalid';
  return false;
}

/** A worker whose snapshot step failed in a pass (PassSummary.failed). */
export interface FailedStep {
  workerId: string;
  /** Retrying cannot help: it fails the same way every time (permanentStepFailure). */
  permanent: boolean;
}

/**
 * Of a pass's failed steps, those worth a retry (not permanent), split into the ones the message's own
 * redelivery retries — a request naming a worker: that worker's; one naming none: all — and the others,
 * for which a pass is asked (a tick's: all).
 */
export function retriesOf(
  failed: readonly FailedStep[],
  request: { workerId?: string } | null,
): { own: string[]; others: string[] } {
  const retryable = failed.filter((f) => !f.permanent).map((f) => f.workerId);
  if (request === null) return { own: [], others: retryable };
  const { workerId } = request;
  if (workerId === undefined) return { own: retryable, others: [] };
  return { own: retryable.filter((w) => w === workerId), others: retryable.filter((w) => w !== workerId) };
}
