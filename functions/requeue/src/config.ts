// The requeue function's environment. The sweep window follows the Scheduler cadence of the
// requeue-sweep job (shared/topology/schedules.json): every minute on GCP, `localEverySeconds` on the
// emulators, so local and deployed sweeps cover their ticks exactly.
import { z } from 'zod';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { loadScheduleTable } from '../../../shared/src/config/topology.js';
import { ReconcileEnv } from '../../reconcile/src/config.js';

export const REQUEUE_JOB = 'requeue-sweep';

// Only reconcile's poll intervals (the sweep's DriftPoll slots): the VM network, account and pass limits are
// reconcile's alone, and a schema that accepted them here would let Terraform set them on requeue unnoticed.
export const RequeueEnv = BaseEnv.extend({
  ...ReconcileEnv.pick({
    RECONCILE_PROVISIONING_POLL_MS: true,
    RECONCILE_DELETION_POLL_MS: true,
    RECONCILE_DRIFT_POLL_MS: true,
    RECONCILE_QUOTA_RETRY_MS: true,
  }).shape,
  /** Overrides the tick period derived from the schedule table. */
  REQUEUE_TICK_PERIOD_SECONDS: envNumber(z.number().positive().max(600)).optional(),
  REQUEUE_POLL_MS: envNumber(z.number().int().min(50).max(10_000)).default(1_000),
  /** Stop this long before the next tick (deployed: cold starts and the publish flush fit in it). */
  REQUEUE_MARGIN_MS: envNumber(z.number().int().min(0).max(30_000)).optional(),
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
