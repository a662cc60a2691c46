import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import type { RetentionDecision } from '../../../shared/src/domain/workers/retention.js';
import { DEFAULT_WORKER_SETTINGS } from '../../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { OwnershipState } from '../../../shared/src/ports/workers-ownership.js';
import type {
  InvalidStoredWorker,
  RetentionSweepResult,
  StoredFacts,
} from '../../../shared/src/ports/workers-retention.js';
import { loadSnapshotConfig } from './config.js';
import { retireOldWorkers } from './retention.js';

const now = new Date('2026-12-01T12:00:00Z');
const WEEK = 7 * 86_400_000;
const cutoff = new Date(now.getTime() - WEEK);
const longAgo = new Date(cutoff.getTime() - 86_400_000);

const state: OwnershipState = {
  epoch: 9,
  records: new Map([['px-1', { proxy: 'px-1', owner: 'gw-owner', since: 3, drainEpoch: null }]]),
  lock: null,
  token: 't',
};
const deadFacts: StoredFacts = {
  sessionValidUntil: longAgo,
  header: { grantedUntil: longAgo, validUntil: longAgo, ownershipEpoch: 8 },
};

function deps(candidates: () => Promise<string[]>, invalid: InvalidStoredWorker[] = []) {
  const decisions = new Map<string, RetentionDecision>();
  const remove = vi.fn(
    async (
      ids: readonly string[],
      _cutoff: Date,
      decide: (id: string, f: StoredFacts) => RetentionDecision,
    ): Promise<RetentionSweepResult> => {
      for (const id of ids) decisions.set(id, decide(id, deadFacts));
      return {
        removed: [{ workerId: 'gw-dead', worker: true, header: true, parts: 1, outcomeBatches: 2 }],
        kept: [{ workerId: 'gw-owner', reason: 'owns_proxies' }],
        failed: [{ workerId: 'gw-flaky', kind: 'unavailable' }],
      };
    },
  );
  const read = vi.fn(async () => state);
  const log = memoryLogger();
  return {
    decisions,
    remove,
    read,
    log,
    deps: {
      retired: {
        candidates: vi.fn(async () => ({ ids: await candidates(), invalid })),
        remove,
        sessionsEnded: vi.fn(async () => [{ workerId: 'gw-gone', endedAt: longAgo }]),
        subscriptionCursor: vi.fn(async () => null),
        saveSubscriptionCursor: vi.fn(async () => {}),
      },
      ownership: { read } as never,
      clock: new ManualClock(now),
      log,
      settings: DEFAULT_WORKER_SETTINGS,
      retention: { afterMs: WEEK, batch: 20 },
    },
  };
}

describe('retireOldWorkers', () => {
  it('decides each candidate with the owners and epoch read, logs and counts what went', async () => {
    const d = deps(async () => ['gw-dead', 'gw-owner', 'gw-flaky']);
    expect(await retireOldWorkers(d.deps)).toEqual({ retired: 1, failures: 1 });
    expect(d.deps.retired.candidates).toHaveBeenCalledWith(cutoff, 20);
    expect(d.remove).toHaveBeenCalledWith(['gw-dead', 'gw-owner', 'gw-flaky'], cutoff, expect.any(Function));
    // The owner the planner still names is kept; the others go whole (their header's epoch 8 < 9).
    expect(d.decisions.get('gw-owner')).toEqual({ kind: 'keep', reason: 'owns_proxies' });
    expect(d.decisions.get('gw-dead')).toEqual({ kind: 'delete', header: true });
    expect(d.log.lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          event: 'gateway.workers_retired',
          workers: [{ workerId: 'gw-dead', worker: true, header: true, parts: 1, outcomeBatches: 2 }],
        }),
        expect.objectContaining({ severity: 'WARNING', workerId: 'gw-flaky', kind: 'unavailable' }),
      ]),
    );
  });

  it('nothing past retention: the ownership is not even read, nothing logged', async () => {
    const d = deps(async () => []);
    expect(await retireOldWorkers(d.deps)).toEqual({ retired: 0, failures: 0 });
    expect(d.read).not.toHaveBeenCalled();
    expect(d.remove).not.toHaveBeenCalled();
    expect(d.log.lines).toEqual([]);
  });

  it('workers out of shape are passed over: one WARNING a tick, ids and field paths, counted as failures', async () => {
    const broken = [
      { workerId: 'gw-edited', fields: ['header.ownershipEpoch'] },
      { workerId: 'gw-edited-2', fields: ['worker.validUntil', 'header.parts'] },
    ];
    const d = deps(async () => ['gw-dead', 'gw-owner', 'gw-flaky'], broken);
    expect(await retireOldWorkers(d.deps)).toEqual({ retired: 1, failures: 3 });
    expect(d.remove).toHaveBeenCalledWith(['gw-dead', 'gw-owner', 'gw-flaky'], cutoff, expect.any(Function));
    const lines = d.log.lines.filter((l) => l.event === 'gateway.workers_retention_invalid');
    expect(lines).toEqual([expect.objectContaining({ severity: 'WARNING', workers: broken })]);
    // Only broken ones: still logged and counted, nothing else read.
    const only = deps(async () => [], broken);
    expect(await retireOldWorkers(only.deps)).toEqual({ retired: 0, failures: 2 });
    expect(only.read).not.toHaveBeenCalled();
    expect(only.log.lines).toEqual([expect.objectContaining({ event: 'gateway.workers_retention_invalid' })]);
  });

  it('deletes the subscriptions of workers gone past the horizon first, counting a failure there too', async () => {
    const d = deps(async () => ['gw-dead']);
    const subscriptions = {
      remove: vi.fn(async () => {
        throw Object.assign(new Error('PERMISSION_DENIED'), { code: 7 });
      }),
    };
    expect(await retireOldWorkers({ ...d.deps, subscriptions })).toEqual({ retired: 1, failures: 2 });
    expect(subscriptions.remove).toHaveBeenCalledWith('gw-gone');
    // The documents' retention ran all the same.
    expect(d.remove).toHaveBeenCalled();
    // Without a reaper (a test of the pass), the subscriptions are left alone.
    const none = deps(async () => []);
    await retireOldWorkers(none.deps);
    expect(none.deps.retired.sessionsEnded).not.toHaveBeenCalled();
  });

  it('the tick’s upkeep deadline: no worker’s removal begun past it, those left logged; begun early, the whole batch', async () => {
    const ids = ['gw-1', 'gw-2', 'gw-3', 'gw-4'];
    const d = deps(async () => ids);
    const clock = d.deps.clock as ManualClock;
    // Each removal takes 4 s by the clock: with 10 s left, the third begins at 8 s and is the last.
    const one = vi.fn(async (removing: readonly string[]): Promise<RetentionSweepResult> => {
      clock.advance(4_000);
      return {
        removed: removing.map((workerId) => ({
          workerId,
          worker: true,
          header: true,
          parts: 0,
          outcomeBatches: 0,
        })),
        kept: [],
        failed: [],
      };
    });
    const late = { ...d.deps, retired: { ...d.deps.retired, remove: one } };
    expect(await retireOldWorkers(late, now.getTime() + 10_000)).toEqual({ retired: 3, failures: 0 });
    expect(one.mock.calls.map((c) => c[0])).toEqual([['gw-1'], ['gw-2'], ['gw-3']]);
    expect(d.log.lines).toContainEqual(
      expect.objectContaining({
        event: 'gateway.upkeep_deadline_reached',
        step: 'worker_retention',
        retired: 3,
        left: 1,
      }),
    );
    // Past it from the start: not even the candidates are listed.
    one.mockClear();
    expect(await retireOldWorkers(late, clock.now().getTime())).toEqual({ retired: 0, failures: 0 });
    expect(late.retired.candidates).toHaveBeenCalledOnce();
    expect(one).not.toHaveBeenCalled();
    // A listing that ran into the deadline: no ownership read begun past it either.
    let slowClock!: ManualClock;
    const slow = deps(async () => {
      slowClock.advance(10_000);
      return ids;
    });
    slowClock = slow.deps.clock as ManualClock;
    const slowDeadline = slowClock.now().getTime() + 10_000;
    expect(await retireOldWorkers(slow.deps, slowDeadline)).toEqual({ retired: 0, failures: 0 });
    expect(slow.read).not.toHaveBeenCalled();
    expect(slow.remove).not.toHaveBeenCalled();
    // Begun early: every candidate.
    clock.set(now);
    expect(await retireOldWorkers(late, now.getTime() + 90_000)).toEqual({ retired: 4, failures: 0 });
  });

  it('candidates that cannot be listed: one failure, logged, never thrown', async () => {
    const d = deps(async () => {
      throw new WorkerStoreError('unavailable', 'firestore down');
    });
    expect(await retireOldWorkers(d.deps)).toEqual({ retired: 0, failures: 1 });
    expect(d.log.lines).toEqual([expect.objectContaining({ severity: 'WARNING', kind: 'unavailable' })]);
  });
});

describe('retention settings', () => {
  it('default to a week, 20 workers per tick', () => {
    expect(loadSnapshotConfig({ GOOGLE_CLOUD_PROJECT: 'p' }).retention).toEqual({
      afterMs: WEEK,
      batch: 20,
    });
  });

  it.each([
    [{ WORKER_RETENTION_SECONDS: '3600' }, false], // under a day: too close to live grants
    [{ WORKER_RETENTION_SECONDS: '86400' }, true],
    [{ WORKER_RETENTION_SECONDS: '86400', WORKER_VIEW_HORIZON_SECONDS: '172800' }, false], // below the horizon
    [{ WORKER_RETENTION_BATCH: '0' }, false],
    [{ WORKER_RETENTION_BATCH: '501' }, false],
  ])('%o accepted: %s', (env, ok) => {
    const load = () => loadSnapshotConfig({ GOOGLE_CLOUD_PROJECT: 'p', ...env });
    if (ok) expect(load).not.toThrow();
    else expect(load).toThrow();
  });
});
