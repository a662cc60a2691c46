// Records each requeue sweep in jobRuns/requeue-sweep (issue 11: the job list shows when it last ran and
// how many proxies it requeued). Unlike probe and gc, a sweep is never skipped as a duplicate: sweeps are
// built to overlap harmlessly (sweep.ts), so the record only reports (recordRun).
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { logTickFailure } from '../../../shared/src/adapters/log/tick-failure.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import { type JobRunStore, type RunResult, recordRun } from '../../../shared/src/ports/job-runs.js';
import { REQUEUE_JOB } from './config.js';
import type { SweepReport } from './sweep.js';

export const sweepResult = (r: SweepReport): RunResult => ({
  ok: r.publishFailures === 0,
  counts: {
    proxiesRequeued: r.due + r.drift,
    due: r.due,
    drift: r.drift,
    publishFailures: r.publishFailures,
    polls: r.polls,
  },
  error: r.publishFailures > 0 ? `${r.publishFailures} publish(es) failed` : null,
});

/**
 * A sweep whose publishes failed returns (the due times stay in Firestore, the next poll or sweep publishes
 * them again) but is a failed run: recorded not ok, and logged as a failed tick (job.tick_failed), so that
 * a requeue that cannot publish at all - Pub/Sub refusing it - pages through failing_jobs. A sweep that
 * throws is logged by the caller (index.ts).
 */
export async function recordedSweep(
  deps: { runs: JobRunStore; clock: Clock; log: Logger },
  sweep: () => Promise<SweepReport>,
): Promise<SweepReport> {
  const report = await recordRun(
    {
      runs: deps.runs,
      now: () => deps.clock.now(),
      onRecordError: (err) => deps.log.warn('requeue sweep not recorded', { error: err }),
    },
    REQUEUE_JOB,
    sweep,
    sweepResult,
  );
  const { error } = sweepResult(report);
  if (error !== null) logTickFailure(deps.log, REQUEUE_JOB, error);
  return report;
}
