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
});

export interface SnapshotConfig {
  projectId: string;
  pubsubEmulatorHost?: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  settings: WorkerSettings;
  lockMs: number;
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
  };
}
