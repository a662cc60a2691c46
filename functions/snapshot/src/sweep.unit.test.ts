import { describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SweepResult } from '../../../shared/src/ports/workers-snapshots.js';
import { loadSnapshotConfig } from './config.js';
import { sweepOldSnapshots } from './sweep.js';

const now = new Date('2026-11-30T12:00:00Z');
const WEEK = 7 * 86_400_000;

function deps(sweepParts: (cutoff: Date, limit: number, at: Date) => Promise<SweepResult>) {
  const log = memoryLogger();
  const spy = vi.fn(sweepParts);
  return {
    spy,
    log,
    deps: {
      snapshots: { sweepParts: spy } as never,
      clock: new ManualClock(now),
      log,
      sweep: { afterMs: WEEK, batch: 20 },
    },
  };
}

describe('sweepOldSnapshots', () => {
  it('asks for a batch of snapshots whose grant ended `afterMs` ago and logs the ones swept', async () => {
    const d = deps(async () => ({ swept: ['gw-a', 'gw-b'], failed: [] }));
    expect(await sweepOldSnapshots(d.deps)).toEqual({ swept: 2, failures: 0 });
    expect(d.spy).toHaveBeenCalledWith(new Date(now.getTime() - WEEK), 20, now);
    expect(d.log.lines).toEqual([
      expect.objectContaining({ event: 'gateway.snapshots_swept', workers: ['gw-a', 'gw-b'] }),
    ]);
  });

  it('nothing to sweep: nothing logged', async () => {
    const d = deps(async () => ({ swept: [], failed: [] }));
    expect(await sweepOldSnapshots(d.deps)).toEqual({ swept: 0, failures: 0 });
    expect(d.log.lines).toEqual([]);
  });

  it('a failed sweep is logged and left to the next tick, never thrown into the pass', async () => {
    const d = deps(async () => {
      throw new WorkerStoreError('unavailable', 'firestore down');
    });
    expect(await sweepOldSnapshots(d.deps)).toEqual({ swept: 0, failures: 1 });
    expect(d.log.lines).toEqual([expect.objectContaining({ severity: 'WARNING', kind: 'unavailable' })]);
  });

  it('headers that failed are logged one by one (worker id and kind) beside the ones swept', async () => {
    const d = deps(async () => ({
      swept: ['gw-a', 'gw-c'],
      failed: [
        { workerId: 'gw-b', kind: 'unavailable' as const },
        { workerId: 'gw-d', kind: 'conflict' as const },
      ],
    }));
    expect(await sweepOldSnapshots(d.deps)).toEqual({ swept: 2, failures: 2 });
    expect(d.log.lines).toEqual([
      expect.objectContaining({ event: 'gateway.snapshots_swept', workers: ['gw-a', 'gw-c'] }),
      expect.objectContaining({ severity: 'WARNING', workerId: 'gw-b', kind: 'unavailable' }),
      expect.objectContaining({ severity: 'WARNING', workerId: 'gw-d', kind: 'conflict' }),
    ]);
  });
});

describe('sweepOldSnapshots with the tick’s upkeep deadline', () => {
  it('past the deadline: no header is listed nor swept, and it says so', async () => {
    const d = deps(async () => ({ swept: ['gw-a'], failed: [] }));
    d.deps.clock.advance(10_000);
    expect(await sweepOldSnapshots(d.deps, now.getTime() + 10_000)).toEqual({ swept: 0, failures: 0 });
    expect(d.spy).not.toHaveBeenCalled();
    expect(d.log.lines).toEqual([
      expect.objectContaining({ event: 'gateway.upkeep_deadline_reached', step: 'sweep', swept: 0 }),
    ]);
  });

  it('begun before it: the whole batch, in one call', async () => {
    const d = deps(async () => ({ swept: ['gw-a', 'gw-b'], failed: [] }));
    d.deps.clock.advance(9_999);
    expect(await sweepOldSnapshots(d.deps, now.getTime() + 10_000)).toEqual({ swept: 2, failures: 0 });
    expect(d.spy).toHaveBeenCalledWith(expect.any(Date), 20, new Date(now.getTime() + 9_999));
  });
});

describe('sweep settings', () => {
  const base = { GOOGLE_CLOUD_PROJECT: 'p' };
  it('default: a week after the grant ended, 20 a tick', () => {
    expect(loadSnapshotConfig(base).sweep).toEqual({ afterMs: WEEK, batch: 20 });
  });
  it.each([
    [{ SNAPSHOT_SWEEP_AFTER_SECONDS: '3600' }, false], // under a day: too close to live grants
    [{ SNAPSHOT_SWEEP_AFTER_SECONDS: '86400' }, true],
    [{ SNAPSHOT_SWEEP_BATCH: '0' }, false],
    [{ SNAPSHOT_SWEEP_BATCH: '501' }, false],
  ])('%o accepted: %s', (env, ok) => {
    const load = () => loadSnapshotConfig({ ...base, ...env });
    if (ok) expect(load).not.toThrow();
    else expect(load).toThrow();
  });
});
