// Every Scheduler tick a function takes up says so on one INFO line, `event` `job.tick` with the `job`
// (probe-tick, gc-sweep, requeue-sweep, snapshot-tick). The alert stopped_jobs (terraform/monitoring.tf)
// fires when a job's lines stop coming — the job paused or disabled, Scheduler unable to publish, the
// tick's subscription or function gone — which no failure line shows: job.tick_failed needs a run.
import type { Logger } from './json-logger.js';

export const TickEvent = 'job.tick';

/** Logs that a tick of `job` arrived and is being run (before its run, whatever the run does). */
export function logTickReceived(log: Pick<Logger, 'info'>, job: string): void {
  log.info('scheduled tick received', { event: 'job.tick', job });
}
