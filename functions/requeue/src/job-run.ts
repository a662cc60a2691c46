// Records each requeue sweep in jobRuns/requeue-sweep (issue 11: the job list shows when it last ran and
// how many proxies it requeued). Unlike probe and gc, a sweep is never skipped as a duplicate (minimum gap
// 0): sweeps are built to overlap harmlessly (sweep.ts), so the record only reports, and a failure to
// record never stops a sweep.
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { REQUEUE_JOB } from './config.js';
import type { SweepReport } from './sweep.js';

export const sweepCounts = (r: SweepReport): Record<string, number> => ({
  proxiesRequeued: r.due + r.drift,
  due: r.due,
  drift: r.drift,
  publishFailures: r.publishFailures,
  polls: r.polls,
});

export async function recordedSweep(
  deps: { runs: JobRunStore; clock: Clock; log: Logger },
  sweep: () => Promise<SweepReport>,
): Promise<SweepReport> {
  const { runs, clock, log } = deps;
  let recording = false;
  try {
    recording = (await runs.claim(REQUEUE_JOB, clock.now(), 0)) !== null;
  } catch (err) {
    log.warn('requeue sweep not recorded: the run could not be claimed', { error: err });
  }
  const record = async (run: { ok: boolean; counts: Record<string, number>; error: string | null }) => {
    if (!recording) return;
    try {
      await runs.finish(REQUEUE_JOB, { finishedAt: clock.now(), ...run });
    } catch (err) {
      log.warn('requeue sweep not recorded', { error: err });
    }
  };
  let report: SweepReport;
  try {
    report = await sweep();
  } catch (err) {
    await record({ ok: false, counts: {}, error: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  await record({
    ok: report.publishFailures === 0,
    counts: sweepCounts(report),
    error: report.publishFailures > 0 ? `${report.publishFailures} publish(es) failed` : null,
  });
  return report;
}
