import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KickLoop, sleep } from './loops.js';

describe('KickLoop', () => {
  it.each([
    [0, 1],
    [1, 2],
    [5, 2],
  ])('%i kicks during a run → %i runs in all, never two at once', async (extraKicks, runs) => {
    let running = 0;
    let maxParallel = 0;
    let count = 0;
    let release: () => void = () => {};
    const loop = new KickLoop(
      async () => {
        count++;
        running++;
        maxParallel = Math.max(maxParallel, running);
        if (count === 1) await new Promise<void>((r) => (release = r));
        running--;
      },
      () => {},
    );
    const done = loop.kick();
    for (let i = 0; i < extraKicks; i++) void loop.kick();
    release();
    await done;
    expect(count).toBe(runs);
    expect(maxParallel).toBe(1);
    expect(loop.busy).toBe(false);
  });

  it('a kick from inside the last run is not lost', async () => {
    let count = 0;
    const loop = new KickLoop(
      async () => {
        count++;
        if (count === 1) queueMicrotask(() => void loop.kick());
        await Promise.resolve();
      },
      () => {},
    );
    await loop.kick();
    await new Promise((r) => setTimeout(r, 0));
    expect(count).toBe(2);
  });

  it('reports a failing run and keeps working', async () => {
    const errors: unknown[] = [];
    let fail = true;
    const loop = new KickLoop(
      async () => {
        if (fail) throw new Error('boom');
      },
      (e) => errors.push(e),
    );
    await loop.kick();
    fail = false;
    await loop.kick();
    expect(errors).toHaveLength(1);
  });
});

describe('sleep', () => {
  // Fake timers: what is proved is which timer ends the sleep, not how long a loaded machine took.
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const track = (p: Promise<void>) => {
    const state = { done: false };
    void p.then(() => {
      state.done = true;
    });
    return state;
  };

  it('ends after its time when not aborted', async () => {
    const s = track(sleep(10_000, new AbortController().signal));
    await vi.advanceTimersByTimeAsync(9_999);
    expect(s.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.done).toBe(true);
  });

  it('ends early when aborted (its timer cleared), and at once when already aborted', async () => {
    const a = new AbortController();
    const s = track(sleep(10_000, a.signal));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(s.done).toBe(false);
    a.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(s.done).toBe(true);
    expect(vi.getTimerCount()).toBe(0);

    const again = track(sleep(10_000, a.signal));
    await vi.advanceTimersByTimeAsync(0);
    expect(again.done).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });
});
