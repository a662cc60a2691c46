// What a snapshot-tick run records in jobRuns/snapshot-tick (issue 11: the job list shows when the job
// last ran and what it did). Only Scheduler ticks are recorded: a worker's snapshot request is not a run
// of the job. A tick that found the planner busy (another pass holds the lock) or whose pass failed
// returns no summary (handler.ts logs which): recorded as not ok, with the counts of the upkeep it still ran.
import type { RunResult } from '../../../shared/src/ports/job-runs.js';
import type { SnapshotOutcome, UpkeepCounts } from './handler.js';
import type { PassSummary } from './pass.js';

export const SnapshotJob = 'snapshot-tick';

export function snapshotRunResult(r: {
  outcome: SnapshotOutcome;
  summary?: PassSummary;
  upkeep?: UpkeepCounts;
}): RunResult {
  if (!r.summary) {
    return {
      ok: false,
      counts: { ...r.upkeep },
      error: 'no pass: the planner was busy or the pass failed (see the snapshot log)',
    };
  }
  const s = r.summary;
  // A failed sweep or retention is counted but leaves the run ok: the pass did its work, and the next tick
  // tries again.
  return {
    ok: s.failures === 0,
    counts: {
      passes: s.ran ? 1 : 0,
      ownershipChanges: s.ownershipChanges,
      published: s.published,
      resent: s.resent,
      failures: s.failures,
      swept: s.swept,
      sweepFailures: s.sweepFailures,
      retired: s.retired,
      retireFailures: s.retireFailures,
      workers: s.workers.length,
    },
    error: s.failures > 0 ? `${s.failures} worker snapshot step(s) failed` : null,
  };
}
