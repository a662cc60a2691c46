import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../shared/src/ports/clock.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import { HeldLock } from './planner-lock.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A lock taken at T0 for 30 s, extended up to 130 s; each extension answers the next version `v1`, `v2`, … */
function held(over: { lockHoldMs?: number; extendLock?: () => Promise<string | null> } = {}) {
  const clock = new ManualClock(T0);
  let n = 0;
  const extendLock = vi.fn(over.extendLock ?? (async () => `v${++n}`));
  const releaseLock = vi.fn(async () => {});
  const warn = vi.fn();
  const lock = new HeldLock(
    {
      clock,
      log: { info: vi.fn(), warn, error: vi.fn() } as never,
      lockMs: 30_000,
      lockHoldMs: 'lockHoldMs' in over ? over.lockHoldMs : 130_000,
      ownership: { extendLock, releaseLock },
    },
    'pass-a',
    'v0',
    T0,
  );
  /** Moves the clock and the timers on together. */
  const pass = async (ms: number) => {
    for (let left = ms; left > 0; left -= 1000) {
      clock.advance(Math.min(1000, left));
      await vi.advanceTimersByTimeAsync(Math.min(1000, left));
    }
  };
  return { lock, pass, extendLock, releaseLock, warn };
}

describe('HeldLock', () => {
  it('extends the lock every third of its lifetime, each time on the version the last extension left', async () => {
    const h = held();
    await h.pass(30_000);
    expect(h.extendLock.mock.calls).toEqual([
      ['pass-a', 'v0', at(40)],
      ['pass-a', 'v1', at(50)],
      ['pass-a', 'v2', at(60)],
    ]);
    expect(h.lock.token).toBe('v3');
    expect(h.lock.lost).toBe(false);
  });

  it('never past lockHoldMs after it was taken: a pass running on past its timeout lets it lapse', async () => {
    const h = held();
    await h.pass(300_000);
    const untils = h.extendLock.mock.calls.map((c) => (c as unknown[])[2] as Date);
    expect(untils.at(-1)).toEqual(at(130));
    expect(untils.every((u) => u <= at(130))).toBe(true);
    const calls = h.extendLock.mock.calls.length;
    await h.pass(60_000);
    expect(h.extendLock).toHaveBeenCalledTimes(calls);
  });

  it('without lockHoldMs: never extended', async () => {
    const h = held({ lockHoldMs: undefined });
    await h.pass(60_000);
    expect(h.extendLock).not.toHaveBeenCalled();
  });

  it('no extension beside exclusive work (the commits): the one due runs after it, on the version it left', async () => {
    const h = held();
    let finish!: () => void;
    const work = h.lock.exclusive(
      () =>
        new Promise<string>((r) => {
          finish = () => r('planned');
        }),
    );
    await h.pass(25_000);
    expect(h.extendLock).not.toHaveBeenCalled();
    h.lock.token = 'commit-1';
    finish();
    expect(await work).toBe('planned');
    await vi.advanceTimersByTimeAsync(0);
    expect(h.extendLock.mock.calls).toEqual([['pass-a', 'commit-1', at(55)]]);
  });

  it('release stops the heartbeat and gives the lock up on the last version, after an extension in flight', async () => {
    let answer!: (v: string) => void;
    const h = held({
      extendLock: () =>
        new Promise<string>((r) => {
          answer = r;
        }),
    });
    await h.pass(10_000);
    expect(h.extendLock).toHaveBeenCalledOnce();
    const released = h.lock.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(h.releaseLock).not.toHaveBeenCalled();
    answer('v1');
    await released;
    expect(h.releaseLock).toHaveBeenCalledWith('pass-a', 'v1');
    await h.pass(60_000);
    expect(h.extendLock).toHaveBeenCalledOnce();
  });

  it('a release that fails is logged, not thrown: the pass did its work, and the lock lapses on its own', async () => {
    const h = held();
    h.releaseLock.mockRejectedValueOnce(new WorkerStoreError('unavailable', 'release the planner lock: 14'));
    await expect(h.lock.release()).resolves.toBeUndefined();
    expect(h.warn).toHaveBeenCalledWith(
      expect.any(String),
      expect.objectContaining({
        event: 'gateway.planner_lock_release_failed',
        holder: 'pass-a',
        until: at(30),
      }),
    );
    await h.pass(60_000);
    expect(h.extendLock).not.toHaveBeenCalled();
  });

  it('release after exclusive work that failed: the heartbeat stops all the same', async () => {
    const h = held();
    await expect(h.lock.exclusive(async () => Promise.reject(new Error('commit failed')))).rejects.toThrow();
    await h.lock.release();
    await h.pass(60_000);
    expect(h.extendLock).not.toHaveBeenCalled();
    expect(h.releaseLock).toHaveBeenCalledWith('pass-a', 'v0');
  });

  it('an extension refused (another pass took the lock): lost, logged, not tried again', async () => {
    const h = held({ extendLock: async () => null });
    await h.pass(10_000);
    expect(h.lock.lost).toBe(true);
    expect(h.warn).toHaveBeenCalledWith(
      expect.any(String),
      expect.objectContaining({ event: 'gateway.planner_lock_lost', holder: 'pass-a' }),
    );
    await h.pass(60_000);
    expect(h.extendLock).toHaveBeenCalledOnce();
  });

  it('an extension that failed: logged, not lost, and the next beat extends the lock', async () => {
    let calls = 0;
    const h = held({
      extendLock: async () => {
        if (++calls === 1) throw new WorkerStoreError('unavailable', 'down');
        return `v${calls - 1}`;
      },
    });
    await h.pass(10_000);
    expect(h.lock.lost).toBe(false);
    expect(h.warn).toHaveBeenCalledWith(
      expect.any(String),
      expect.objectContaining({ event: 'gateway.planner_lock_extend_failed', holder: 'pass-a' }),
    );
    await h.pass(10_000);
    expect(h.extendLock.mock.calls).toEqual([
      ['pass-a', 'v0', at(40)],
      ['pass-a', 'v0', at(50)],
    ]);
    expect(h.lock.token).toBe('v1');
    expect(h.lock.lost).toBe(false);
    expect(h.warn).not.toHaveBeenCalledWith(
      expect.any(String),
      expect.objectContaining({ event: 'gateway.planner_lock_lost' }),
    );
  });

  it('extensions that fail until the lock lapses: lost, logged, not tried again', async () => {
    const h = held({
      extendLock: async () => {
        throw new WorkerStoreError('unavailable', 'down');
      },
    });
    await h.pass(20_000);
    expect(h.lock.lost).toBe(false);
    await h.pass(10_000);
    expect(h.extendLock).toHaveBeenCalledTimes(3);
    expect(h.lock.lost).toBe(true);
    expect(h.warn).toHaveBeenLastCalledWith(
      expect.any(String),
      expect.objectContaining({ event: 'gateway.planner_lock_lost', holder: 'pass-a' }),
    );
    await h.pass(60_000);
    expect(h.extendLock).toHaveBeenCalledTimes(3);
  });
});
