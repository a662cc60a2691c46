// The requeue function's environment. The sweep window follows the Scheduler cadence of the
// requeue-sweep job (shared/topology/schedules.json): every minute on GCP, `localEverySeconds` on the
// emulators, so local and deployed sweeps cover their ticks exactly.
import { z } from 'zod';
import { RECORD_MARGIN_MS } from '../../../shared/src/adapters/deadline.js';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { loadFunctionTable, loadScheduleTable } from '../../../shared/src/config/topology.js';
import { ReconcileEnv } from '../../reconcile/src/config.js';
import { LIST_DUE_GRACE_MS } from './sweep.js';

export const REQUEUE_JOB = 'requeue-sweep';

// Only reconcile's poll intervals (the sweep's DriftPoll slots): the VM network, account and pass limits are
// reconcile's alone, and a schema that accepted them here would let Terraform set them on requeue unnoticed.
const RequeueEnvFields = BaseEnv.extend({
  ...ReconcileEnv.pick({
    RECONCILE_PROVISIONING_POLL_MS: true,
    RECONCILE_DELETION_POLL_MS: true,
    RECONCILE_DRIFT_POLL_MS: true,
    RECONCILE_QUOTA_RETRY_MS: true,
  }).shape,
  /** Overrides the tick period derived from the schedule table; at most the function's timeout less the
   *  sweep's tail (RequeueEnv). */
  REQUEUE_TICK_PERIOD_SECONDS: envNumber(z.number().positive().max(600)).optional(),
  REQUEUE_POLL_MS: envNumber(z.number().int().min(50).max(10_000)).default(1_000),
  /** Stop this long before the next tick (deployed: cold starts and the publish flush fit in it). */
  REQUEUE_MARGIN_MS: envNumber(z.number().int().min(0).max(30_000)).optional(),
});

/** Time left, in the worst case, for the run's record itself to be written (job-run.ts `finish`). */
export const RECORD_WRITE_MS = 3_000;

/**
 * The longest tick period the requeue function's timeout holds, in ms. A sweep polls until its tick +
 * period − margin (sweep.ts `sweepWindow`; the margin may be 0, so it is not counted), its last listDue
 * page may be waited for max(pollMs, LIST_DUE_GRACE_MS) past that, then its record is written — given up
 * RECORD_MARGIN_MS before the timeout (job-run.ts), and RECORD_WRITE_MS is left for it. The invocation
 * starts at or after its tick, so measured from the invocation the sweep ends no later. 120 s timeout, 1 s
 * poll: 120 − 5 − 2 − 3 = 110 s. Past it (REQUEUE_TICK_PERIOD_SECONDS allowed 600) every sweep was cut
 * off by the timeout, unrecorded, with what it had scheduled still held in the instance's memory.
 */
export function mostTickPeriodMs(pollMs: number, timeoutSeconds: number): number {
  return timeoutSeconds * 1000 - Math.max(pollMs, LIST_DUE_GRACE_MS) - RECORD_MARGIN_MS - RECORD_WRITE_MS;
}

export const RequeueEnv = RequeueEnvFields.superRefine((e, ctx) => {
  if (e.REQUEUE_TICK_PERIOD_SECONDS === undefined) return;
  const timeout = loadFunctionTable().functions.requeue?.timeoutSeconds ?? 120;
  const most = mostTickPeriodMs(e.REQUEUE_POLL_MS, timeout);
  if (e.REQUEUE_TICK_PERIOD_SECONDS * 1000 > most) {
    ctx.addIssue({
      code: 'custom',
      path: ['REQUEUE_TICK_PERIOD_SECONDS'],
      message: `must be at most ${most / 1000} s: the requeue function's ${timeout} s timeout (shared/topology/functions.json) less the last listDue grace (max(REQUEUE_POLL_MS, ${LIST_DUE_GRACE_MS} ms)), the record's margin (${RECORD_MARGIN_MS} ms) and its write (${RECORD_WRITE_MS} ms)`,
    });
  }
});
export type RequeueConfig = z.infer<typeof RequeueEnv>;

export const loadRequeueConfig = (env: NodeJS.ProcessEnv = process.env): RequeueConfig =>
  RequeueEnv.parse(env);

/** Cloud Scheduler's finest cadence is a minute; the table's `localEverySeconds` applies on the emulators. */
export function tickPeriodMs(config: RequeueConfig): number {
  if (config.REQUEUE_TICK_PERIOD_SECONDS) return config.REQUEUE_TICK_PERIOD_SECONDS * 1000;
  const job = loadScheduleTable().jobs[REQUEUE_JOB];
  if (!job) throw new Error(`schedules.json has no ${REQUEUE_JOB} job`);
  return config.PUBSUB_EMULATOR_HOST ? job.localEverySeconds * 1000 : 60_000;
}

export const marginMs = (config: RequeueConfig, periodMs: number): number =>
  config.REQUEUE_MARGIN_MS ?? Math.min(1_000, Math.floor(periodMs / 10));

/**
 * How often one instance re-lists the steady fleet: half a DriftPoll, so every steady proxy is listed at
 * least once per drift period, not every tick (the check runs once per sweep, so the fleet is listed on
 * the first tick at least this long after the last listing). docs/cost.md prices it.
 */
export const steadyRefreshMs = (periodMs: number, driftPollMs: number): number =>
  Math.max(periodMs, Math.floor(driftPollMs / 2));
