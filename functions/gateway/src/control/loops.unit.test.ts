import { describe, expect, it } from 'vitest';
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
  it('ends early when aborted, and at once when already aborted', async () => {
    const a = new AbortController();
    const t0 = Date.now();
    const s = sleep(10_000, a.signal);
    a.abort();
    await s;
    await sleep(10_000, a.signal);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});
