// The snapshot function's environment: the base contract, the worker contract's timing
// (shared/src/domain/workers/settings.ts — the API reads the same variables), and the planner lock's
// lifetime, which follows the function's timeout (shared/topology/functions.json) so that a pass killed at
// its timeout frees the lock for the next one.
import { z } from 'zod';
import { BaseEnv } from '../../../shared/src/config/env.js';
import { loadFunctionTable } from '../../../shared/src/config/topology.js';
import { loadWorkerSettings, type WorkerSettings } from '../../../shared/src/domain/workers/settings.js';

const SnapshotEnv = BaseEnv.extend({
  SNAPSHOT_LOCK_SECONDS: z.coerce.number().int().min(5).max(900).optional(),
  // Sweep a snapshot's parts this long after its grant ended (a day at least: far past any grant, and
  // long enough that an operator still sees what a worker that just died was sent).
  SNAPSHOT_SWEEP_AFTER_SECONDS: z.coerce
    .number()
    .int()
    .min(86_400)
    .max(365 * 86_400)
    .default(7 * 86_400),
  // Headers swept per tick (one transaction each): 1,440 ticks a day clear a backlog of thousands in hours.
  SNAPSHOT_SWEEP_BATCH: z.coerce.number().int().min(1).max(500).default(20),
});

export interface SnapshotConfig {
  projectId: string;
  pubsubEmulatorHost?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  settings: WorkerSettings;
  lockMs: number;
  sweep: { afterMs: number; batch: number };
}

export function loadSnapshotConfig(env: Record<string, string | undefined> = process.env): SnapshotConfig {
  const e = SnapshotEnv.parse(env);
  const timeout = loadFunctionTable().functions.snapshot?.timeoutSeconds ?? 120;
  return {
    projectId: e.GOOGLE_CLOUD_PROJECT,
    pubsubEmulatorHost: e.PUBSUB_EMULATOR_HOST,
    logLevel: e.LOG_LEVEL,
    settings: loadWorkerSettings(env),
    lockMs: (e.SNAPSHOT_LOCK_SECONDS ?? timeout + 10) * 1000,
    sweep: { afterMs: e.SNAPSHOT_SWEEP_AFTER_SECONDS * 1000, batch: e.SNAPSHOT_SWEEP_BATCH },
  };
}
