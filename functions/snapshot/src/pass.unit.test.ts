// The snapshot pass's own log lines, on stores that answer only what the pass reads before it plans.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../shared/src/domain/workers/settings.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { SnapshotPassDeps } from './deps.js';
import { runSnapshotPass } from './pass.js';

const T0 = new Date('2026-12-02T12:00:00Z');

/** The pass as far as its first plan: taking the lock (not given here) ends it. */
function deps(skipped: string[], log = memoryLogger()) {
  const d = {
    pool: { inPool: async () => ({ proxies: [], skipped }) },
    ownership: { read: async () => ({ epoch: 1, records: new Map(), lock: null, token: null }) },
    workers: { listInView: async () => [] },
    snapshots: { headersInView: async () => new Map() },
    routing: { get: async () => null },
    reclaims: { list: async () => [] },
    leases: { leased: async () => ({ leased: new Set(), versions: new Map() }) },
    clock: new ManualClock(T0),
    log,
    settings: DEFAULT_WORKER_SETTINGS,
    sha256: sha256Hex,
    lockMs: 60_000,
    sweep: { afterMs: 0, batch: 0 },
    retention: { afterMs: 0, batch: 0 },
    newHolder: () => 'h',
  };
  return { deps: d as unknown as SnapshotPassDeps, log };
}

describe('gateway-pool proxies whose documents do not fit the model', () => {
  it('are logged every pass as their full count and the first 100 names: a fleet of them fits one entry', async () => {
    const skipped = Array.from({ length: 10_000 }, (_, i) => `pool-proxy-${String(i).padStart(5, '0')}`);
    const { deps: d, log } = deps(skipped);
    await runSnapshotPass(d).catch(() => undefined);
    const line = log.lines.find(
      (l) => l.message === 'gateway-pool proxies skipped: their documents do not fit the model',
    );
    expect(line).toMatchObject({ count: 10_000, proxies: skipped.slice(0, 100), truncated: true });
    expect(JSON.stringify(line).length).toBeLessThan(32 * 1024);
  });

  it('lists a few whole, without the truncated flag', async () => {
    const { deps: d, log } = deps(['a', 'b']);
    await runSnapshotPass(d).catch(() => undefined);
    const line = log.lines.find(
      (l) => l.message === 'gateway-pool proxies skipped: their documents do not fit the model',
    );
    expect(line).toMatchObject({ count: 2, proxies: ['a', 'b'] });
    expect(line).not.toHaveProperty('truncated');
  });
});
