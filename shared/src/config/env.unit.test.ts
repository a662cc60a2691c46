// A blank numeric setting (`X=` in an env file, `--update-env-vars X=`) was read as 0 by z.coerce.number(),
// and for several settings 0 switches a brake off. Each entry point's loader refuses it now; unset still
// takes the default.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadLeaseConfig } from '../../../functions/api/src/leases/config.js';
import { loadGatewayConfig } from '../../../functions/gateway/src/config.js';
import { loadGcConfig } from '../../../functions/gc/src/config.js';
import { loadProbeConfig } from '../../../functions/probe/src/config.js';
import { loadReconcileConfig } from '../../../functions/reconcile/src/config.js';
import { loadRequeueConfig } from '../../../functions/requeue/src/config.js';
import { loadSnapshotConfig } from '../../../functions/snapshot/src/config.js';
import { loadWorkerSettings } from '../domain/workers/settings.js';
import { envNumber } from './env.js';

describe('envNumber', () => {
  const n = envNumber(z.number().int().min(0)).default(5);
  it.each([
    [undefined, 5],
    ['0', 0],
    [' 12 ', 12],
  ])('%j reads as %j', (raw, want) => {
    expect(n.parse(raw)).toBe(want);
  });

  it.each([[''], ['   '], ['abc'], ['1.5']])('refuses %j', (raw) => {
    expect(n.safeParse(raw).success).toBe(false);
  });
});

describe('a blank numeric setting is refused by every loader, never read as 0', () => {
  it.each<[string, (blank: Record<string, string>) => unknown]>([
    ['RECONCILE_MAX_REPLACING', (e) => loadReconcileConfig(e)],
    ['GC_MIN_RUN_GAP_SECONDS', (e) => loadGcConfig(e)],
    ['PROBE_LOOP_SECONDS', (e) => loadProbeConfig(e)],
    ['REQUEUE_POLL_MS', (e) => loadRequeueConfig(e)],
    ['SNAPSHOT_SWEEP_BATCH', (e) => loadSnapshotConfig(e)],
    ['CLOCK_SKEW_SECONDS', (e) => loadWorkerSettings(e)],
    ['ALLOCATION_SAFETY_MARGIN_SECONDS', (e) => loadWorkerSettings(e)],
    ['LEASE_CREDENTIALS_CACHE_SECONDS', (e) => loadLeaseConfig(e)],
    ['GATEWAY_DRAIN_TIMEOUT_MS', (e) => loadGatewayConfig(['--snapshot', 's.json'], e)],
  ])('%s=""', (name, load) => {
    expect(() => load({ [name]: '' })).toThrow(new RegExp(name));
  });
});
