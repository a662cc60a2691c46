// Records each requeue sweep in jobRuns/requeue-sweep (issue 11: the job list shows when it last ran and
// how many proxies it requeued), and claims it by its tick: a tick Pub/Sub delivers twice is swept once,
// and another tick is never refused, however soon after a run it comes. Sweeps are built to overlap
// harmlessly (sweep.ts) and the record otherwise only reports: a sweep whose claim fails still runs
// (recordRun).
import { boundedRuns } from '../../../shared/src/adapters/bounded-job-runs.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { logTickFailure, messageOf } from '../../../shared/src/adapters/log/tick-failure.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import {
  type JobRun,
  type JobRunStore,
  type RunResult,
  recordRun,
} from '../../../shared/src/ports/job-runs.js';
import { REQUEUE_JOB } from './config.js';
import type { SweepReport } from './sweep.js';

function sweepError(r: SweepReport): string | null {
  const parts = [
    r.failure === undefined ? null : `sweep stopped: ${messageOf(r.failure)}`,
    r.driftSkipped === undefined ? null : `drift slots skipped: ${messageOf(r.driftSkipped)}`,
    r.publishFailures > 0 ? `${r.publishFailures} publish(es) failed` : null,
  ].filter((s) => s !== null);
  return parts.length > 0 ? parts.join('; ') : null;
}

export const sweepResult = (r: SweepReport): RunResult => {
  const error = sweepError(r);
  return {
    ok: error === null,
    counts: {
      proxiesRequeued: r.due + r.drift,
      due: r.due,
      drift: r.drift,
      publishFailures: r.publishFailures,
      polls: r.polls,
    },
    error,
    nextWindowStart: r.nextDriftFrom,
  };
};

/**
 * Where the last sweep left the drift range, as its run recorded it; null when there is no record, and
 * while the last run is still within its window (its deadline): that range is its own. A run past its
 * deadline that never recorded its end died (a crash, the function's timeout) — or is publishing its last
 * slots this moment: the range is taken up where the last finished run left it (its claim carried that
 * over), so the slots the dead run left are published late rather than never; one still finishing costs
 * duplicate passes. A record claimed without a deadline (before one was recorded) says nothing.
 */
export function resumeDriftAt(previous: JobRun | null, now: Date): Date | null {
  if (!previous) return null;
  if (previous.finishedAt) return previous.nextWindowStart ?? null;
  const dead = previous.deadline != null && previous.deadline.getTime() <= now.getTime();
  return dead ? (previous.nextWindowStart ?? null) : null;
}

/**
 * The run's claim is waited for CLAIM_TIMEOUT_MS: past it the sweep runs unrecorded, as after a failed
 * claim, with most of its window left — unbounded, a stalled claim held the sweep past its window and the
 * function's timeout, which cut the invocation off with nothing recorded or logged. Its record is waited
 * for until RECORD_MARGIN_MS before the timeout (boundedRuns, shared with the probe and snapshot ticks).
 *
 * A sweep that stopped early (Firestore unavailable) or whose publishes failed returns (the due times stay
 * in Firestore, the next poll or sweep publishes them again) but is a failed run: recorded not ok, with
 * where the next sweep takes the drift range up, and logged as a failed tick (job.tick_failed), so that a
 * requeue that cannot read or publish at all pages through failing_jobs. A sweep that throws (a bug) is
 * logged by the caller (event.ts).
 */
export async function recordedSweep(
  deps: {
    runs: JobRunStore;
    clock: Clock;
    log: Logger;
    /** The function's timeout (functions.json), from this call: bounds the run's record. Unset: no bound. */
    timeoutMs?: number;
  },
  run: {
    /**
     * The tick's identity, the same on every delivery of it (its publish time, else its message id): a
     * delivery of a tick whose sweep is running or ended ok is a duplicate. Null (a push without either)
     * is never refused.
     */
    tick: string | null;
    /** When the sweep's window ends (sweepWindow): recorded with its claim. */
    deadline: Date;
  },
  sweep: (resumeDriftAt: Date | null) => Promise<SweepReport>,
): Promise<SweepReport | null> {
  const report = await recordRun(
    {
      runs: boundedRuns(deps.runs, deps.clock, deps.timeoutMs),
      now: () => deps.clock.now(),
      onRecordError: (err) => deps.log.warn('requeue sweep not recorded', { error: err }),
    },
    REQUEUE_JOB,
    (previous) => sweep(resumeDriftAt(previous, deps.clock.now())),
    sweepResult,
    // By the tick, not by a gap since the last claim: a duplicate delivered at once (Pub/Sub is at least
    // once, and two instances may take the copies) published every due proxy and drift slot of the minute
    // twice, but a gap of half a period took the next on-time tick, claimed under 30 s after a late one
    // (a cold start, a push retry's backoff), for a duplicate, and nothing polled its minute. After a
    // sweep recorded failed (stopped early), a delivery of its tick runs: it takes up what the failed one
    // left.
    { retryAfterFailure: true, deadline: run.deadline, ...(run.tick === null ? {} : { tick: run.tick }) },
  );
  if (report === null) {
    deps.log.info(
      'requeue tick skipped: another delivery of it is sweeping or swept it (duplicate delivery)',
      {
        tick: run.tick,
      },
    );
    return null;
  }
  const { error } = sweepResult(report);
  if (error !== null) logTickFailure(deps.log, REQUEUE_JOB, error);
  return report;
}
