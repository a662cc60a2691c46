// The snapshot function's environment: the base contract, the worker contract's timing
// (shared/src/domain/workers/settings.ts — the API reads the same variables), and the planner lock's
// lifetime (planner-lock.ts: short, extended while the pass runs) and how long a pass may keep extending
// it, which follows the function's timeout (shared/topology/functions.json) so that a pass running on past
// its timeout frees the lock for the next one.
import { z } from 'zod';
import { BaseEnv, envNumber } from '../../../shared/src/config/env.js';
import { loadFunctionTable } from '../../../shared/src/config/topology.js';
import { loadWorkerSettings, type WorkerSettings } from '../../../shared/src/domain/workers/settings.js';

const SnapshotEnv = BaseEnv.extend({
  // Well under a tick (shared/topology/schedules.json snapshot-tick: every minute; a pass takes the lock
  // some seconds after its tick): a pass that died holding the lock must leave the next tick free to renew
  // the grants, or every gateway's snapshot passes its max stale age (150 s) before one does.
  SNAPSHOT_LOCK_SECONDS: envNumber(z.number().int().min(5).max(45)).default(30),
  // Sweep a snapshot's parts this long after its grant ended (a day at least: far past any grant, and
  // long enough that an operator still sees what a worker that just died was sent).
  SNAPSHOT_SWEEP_AFTER_SECONDS: envNumber(
    z
      .number()
      .int()
      .min(86_400)
      .max(365 * 86_400),
  ).default(7 * 86_400),
  // Headers swept per tick (one transaction each): 1,440 ticks a day clear a backlog of thousands in hours.
  SNAPSHOT_SWEEP_BATCH: envNumber(z.number().int().min(1).max(500)).default(20),
  // Delete everything stored for a worker this long after its session (and snapshot, and grant) ended
  // (domain/workers/retention.ts). A week: an incident looked into after a weekend still finds the dead
  // instances' sessions, last reports and snapshot headers (`GET /v1/gateway/workers?all=true`); it is
  // the parts sweep's delay too, so a dead worker's parts go first and the rest right after; and the
  // store is bounded by the instances started in a week, not ever. A day at least: far past any grant,
  // and at least the view horizon (checked below), so nothing the pass or the admin view reads is touched.
  WORKER_RETENTION_SECONDS: envNumber(
    z
      .number()
      .int()
      .min(86_400)
      .max(365 * 86_400),
  ).default(7 * 86_400),
  // Workers looked at per tick (each: two reads, a transaction, and its outcome batches if any).
  WORKER_RETENTION_BATCH: envNumber(z.number().int().min(1).max(500)).default(20),
});

export interface SnapshotConfig {
  projectId: string;
  pubsubEmulatorHost?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  settings: WorkerSettings;
  /** The deployed timeout (functions.json): the planner lock's hold and the run's record follow it. */
  timeoutMs: number;
  lockMs: number;
  lockHoldMs: number;
  sweep: { afterMs: number; batch: number };
  retention: { afterMs: number; batch: number };
}

export function loadSnapshotConfig(env: Record<string, string | undefined> = process.env): SnapshotConfig {
  const e = SnapshotEnv.parse(env);
  const timeout = loadFunctionTable().functions.snapshot?.timeoutSeconds ?? 120;
  const settings = loadWorkerSettings(env);
  if (e.WORKER_RETENTION_SECONDS * 1000 < settings.viewHorizonMs) {
    throw new Error('WORKER_RETENTION_SECONDS must be at least WORKER_VIEW_HORIZON_SECONDS');
  }
  return {
    projectId: e.GOOGLE_CLOUD_PROJECT,
    pubsubEmulatorHost: e.PUBSUB_EMULATOR_HOST,
    logLevel: e.LOG_LEVEL,
    settings,
    timeoutMs: timeout * 1000,
    lockMs: e.SNAPSHOT_LOCK_SECONDS * 1000,
    lockHoldMs: (timeout + 10) * 1000,
    sweep: { afterMs: e.SNAPSHOT_SWEEP_AFTER_SECONDS * 1000, batch: e.SNAPSHOT_SWEEP_BATCH },
    retention: { afterMs: e.WORKER_RETENTION_SECONDS * 1000, batch: e.WORKER_RETENTION_BATCH },
  };
}
