// A job-run store whose calls are waited for only as long as the invocation can afford. Its claim and
// finish are Firestore transactions and writes that the client retries for minutes when Firestore is
// degraded: unbounded, a stalled claim held a tick (and the work behind it) until the function's timeout
// cut the invocation off, with nothing recorded and no failed tick logged (job.tick_failed).
import type { Clock } from '../ports/clock.js';
import type { JobRunStore } from '../ports/job-runs.js';
import { RECORD_MARGIN_MS, withDeadline, withDeadlineAt } from './deadline.js';

/** How long a run's claim is waited for: a healthy one takes well under a second. */
export const CLAIM_TIMEOUT_MS = 10_000;

export { RECORD_MARGIN_MS };

/**
 * `runs` with its claim bounded by CLAIM_TIMEOUT_MS and its finish by the function's timeout `timeoutMs`
 * (functions.json), measured from the run's start (`run.startedAt`), less RECORD_MARGIN_MS — unset: the
 * finish unbounded. A call given up rejects; its write runs on and may still land. What a caller does with
 * a claim given up is its own: recordRun (requeue, snapshot) runs the work unrecorded, the probe fails the
 * tick.
 */
export function boundedRuns(runs: JobRunStore, clock: Clock, timeoutMs?: number): JobRunStore {
  return {
    get: (job) => runs.get(job),
    list: () => runs.list(),
    claim: (...args) =>
      withDeadline(
        runs.claim(...args),
        CLAIM_TIMEOUT_MS,
        () => new Error(`the run's claim gave no answer within ${CLAIM_TIMEOUT_MS} ms`),
      ),
    finish: (job, run) => {
      const finishing = runs.finish(job, run);
      if (timeoutMs === undefined) return finishing;
      return withDeadlineAt(
        finishing,
        run.startedAt.getTime() + timeoutMs - RECORD_MARGIN_MS,
        clock,
        (ms) => new Error(`the run's record gave no answer within the ${ms} ms the invocation had left`),
      );
    },
  };
}
