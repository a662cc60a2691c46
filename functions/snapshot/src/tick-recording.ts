// How a snapshot tick's run is recorded (jobRuns/snapshot-tick, recordRun): with its claim and record
// bounded (boundedRuns). The claim comes before the tick's pass, which renews every gateway worker's
// snapshot (stale after 150 s): unbounded, a claim the Firestore client retried for minutes held the pass
// until the function's timeout cut it off. The record only reports, and the pass matters more: a claim
// given up at CLAIM_TIMEOUT_MS is a failed claim (a WARNING), and the pass runs unrecorded, as requeue's
// sweep does — a tick failed for its bookkeeping would withhold the snapshots until a retry got through.
import { boundedRuns } from '../../../shared/src/adapters/bounded-job-runs.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore, recordRun } from '../../../shared/src/ports/job-runs.js';

export function tickRecording(deps: {
  runs: JobRunStore;
  clock: Clock;
  log: Pick<Logger, 'warn'>;
  /** The function's timeout (shared/topology/functions.json): the record is given up shortly before it. */
  timeoutMs: number;
}): Parameters<typeof recordRun>[0] {
  return {
    runs: boundedRuns(deps.runs, deps.clock, deps.timeoutMs),
    now: () => deps.clock.now(),
    onRecordError: (err: unknown) => deps.log.warn('snapshot tick not recorded', { error: err }),
  };
}
