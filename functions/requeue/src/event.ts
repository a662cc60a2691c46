// The requeue function's event: decode the tick (poison is acknowledged and logged, never swept), then
// sweep its window, the run claimed in jobRuns by the tick's identity so that a second delivery of the same
// tick message sweeps nothing (job-run.ts). A sweep that throws logs one ERROR line (`job.tick_failed`) and
// is acknowledged: the next tick sweeps again, a retried one would overlap it.

import { logTickFailure } from '../../../shared/src/adapters/log/tick-failure.js';
import { logTickReceived } from '../../../shared/src/adapters/log/tick-received.js';
import {
  decodePubSubCloudEvent,
  logUnknownFields,
  poisonFields,
} from '../../../shared/src/adapters/pubsub/decode-push.js';
import { ReceivedTick } from '../../../shared/src/messages/tick.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import { REQUEUE_JOB } from './config.js';
import { recordedSweep } from './job-run.js';
import { runSweep, type SweepDeps, sweepWindow } from './sweep.js';

export interface RequeueEventDeps extends SweepDeps {
  runs: JobRunStore;
  /** The function's deployed timeout: the run's record is waited for only until shortly before it. */
  timeoutMs?: number;
}

/**
 * What every delivery of one tick message carries alike — its publish time, else its message id — and so
 * what tells a duplicate; null (never refused) when the push has neither.
 */
export function tickIdentity(message: { publishTime?: string; messageId?: string }): string | null {
  return message.publishTime || message.messageId || null;
}

export async function onRequeueEvent(deps: RequeueEventDeps, ce: unknown): Promise<void> {
  const { log, clock } = deps;
  const tick = decodePubSubCloudEvent(ce, ReceivedTick);
  if (!tick.ok) {
    // Poison: acknowledged (returning normally) and logged, never retried forever.
    log.error('malformed tick acknowledged', poisonFields(tick));
    return;
  }
  logUnknownFields(log, tick, 'ticks-requeue');
  logTickReceived(log, REQUEUE_JOB);
  try {
    // The tick's time is when Scheduler published it: a late delivery sweeps what is left of its window.
    const stamped = tick.publishTime ? new Date(tick.publishTime) : clock.now();
    const tickAt = Number.isNaN(stamped.getTime()) ? clock.now() : stamped;
    const deadline = new Date(sweepWindow(deps, tickAt, clock.now()).end);
    await recordedSweep(
      { runs: deps.runs, clock, log, timeoutMs: deps.timeoutMs },
      { tick: tickIdentity(tick), deadline },
      (resumeAt) => runSweep(deps, tickAt, resumeAt),
    );
  } catch (err) {
    // The next tick sweeps again; a retried tick would overlap it.
    logTickFailure(log, REQUEUE_JOB, err);
  }
}
