// The snapshot pass's own log lines, on stores that answer only what a pass with nothing to change reads.
import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../shared/src/domain/workers/settings.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import type { SnapshotPassDeps } from './deps.js';
import { runSnapshotPass } from './pass.js';

const T0 = new Date('2026-12-02T12:00:00Z');

/** What no pass over an empty pool reaches: called, it throws, and the pass rejects. */
const unreached = (): never => {
  throw new Error('not reached by a pass with nothing to change');
};

/**
 * A pool of nothing but skipped documents, and no workers: the pass observes, plans, logs what it skipped,
 * finds nothing to change and resolves with `ran: false` before the planner lock. Only what it reads is
 * answered; the rest throws if reached.
 */
function deps(skipped: string[], log = memoryLogger()) {
  const d: SnapshotPassDeps = {
    pool: { inPool: async () => ({ proxies: [], skipped }) },
    ownership: {
      read: async () => ({ epoch: 1, records: new Map(), lock: null, token: null }),
      epoch: unreached,
      acquireLock: unreached,
      commit: unreached,
      releaseLock: unreached,
      extendLock: unreached,
    },
    workers: { listInView: async () => [] },
    snapshots: {
      headersInView: async () => new Map(),
      header: unreached,
      headersOf: unreached,
      loadFull: unreached,
      save: unreached,
      sweepParts: unreached,
      patchHeader: unreached,
    },
    routing: { get: async () => null },
    reclaims: { list: async () => [] },
    leases: { leased: async () => ({ leased: new Set(), versions: new Map() }) },
    publisher: { publish: unreached },
    clock: new ManualClock(T0),
    log,
    settings: DEFAULT_WORKER_SETTINGS,
    sha256: sha256Hex,
    lockMs: 60_000,
    sweep: { afterMs: 0, batch: 0 },
    retention: { afterMs: 0, batch: 0 },
    retired: {
      candidates: unreached,
      remove: unreached,
      sessionsEnded: unreached,
      subscriptionCursor: unreached,
      saveSubscriptionCursor: unreached,
    },
    newHolder: unreached,
  };
  return { deps: d, log };
}

const SKIPPED = 'gateway-pool proxies skipped: their documents do not fit the model';

describe('gateway-pool proxies whose documents do not fit the model', () => {
  it('are logged by a pass in one WARNING as their full count and the first 100 names: a fleet of them fits one entry', async () => {
    const skipped = Array.from({ length: 10_000 }, (_, i) => `pool-proxy-${String(i).padStart(5, '0')}`);
    const { deps: d, log } = deps(skipped);
    await expect(runSnapshotPass(d)).resolves.toMatchObject({ ran: false });
    const lines = log.lines.filter((l) => l.message === SKIPPED);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      severity: 'WARNING',
      count: 10_000,
      proxies: skipped.slice(0, 100),
      truncated: true,
    });
    expect(JSON.stringify(lines[0]).length).toBeLessThan(32 * 1024);
  });

  it('are listed whole when few, in one WARNING without the truncated flag', async () => {
    const { deps: d, log } = deps(['a', 'b']);
    await expect(runSnapshotPass(d)).resolves.toMatchObject({ ran: false });
    const lines = log.lines.filter((l) => l.message === SKIPPED);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ severity: 'WARNING', count: 2, proxies: ['a', 'b'] });
    expect(lines[0]).not.toHaveProperty('truncated');
  });
});
