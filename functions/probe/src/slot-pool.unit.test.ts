import { describe, expect, it } from 'vitest';
import { SlotPool, type Timer } from './slot-pool.js';

/** Timers the test fires by hand; `live()` counts those neither fired nor cancelled. */
function manualTimer() {
  const armed = new Set<() => void>();
  const timer: Timer = (_ms, signal) =>
    new Promise((resolve) => {
      const done = () => {
        armed.delete(done);
        resolve();
      };
      armed.add(done);
      signal.addEventListener('abort', done);
    });
  return { timer, fire: () => [...armed].forEach((f) => void f()), live: () => armed.size };
}

const tick = () => new Promise((r) => setImmediate(r));

/** A task that runs until `finish()`, recording when it started. */
function gate(log: string[], name: string) {
  let finish = () => {};
  const fn = () =>
    new Promise<string>((resolve) => {
      log.push(name);
      finish = () => resolve(name);
    });
  return { fn, finish: () => finish() };
}

describe('SlotPool', () => {
  it('runs at most `size` at once, hands a freed slot to the oldest waiter, and cancels its wait', async () => {
    const t = manualTimer();
    const pool = new SlotPool(2, t.timer);
    const started: string[] = [];
    const gates = ['a', 'b', 'c', 'd'].map((n) => gate(started, n));
    const runs = gates.map((g) => pool.run(g.fn, 1000));
    await tick();
    expect(started).toEqual(['a', 'b']);
    expect(t.live()).toBe(2);
    gates[1]!.finish();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    expect(t.live()).toBe(1);
    gates[0]!.finish();
    await tick();
    gates[2]!.finish();
    gates[3]!.finish();
    expect(await Promise.all(runs)).toEqual(['a', 'b', 'c', 'd'].map((value) => ({ ran: true, value })));
    expect(t.live()).toBe(0);
  });

  it('a caller whose wait expires does not run, and its slot is not lost', async () => {
    const t = manualTimer();
    const pool = new SlotPool(1, t.timer);
    const started: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((n) => gate(started, n));
    const ra = pool.run(a!.fn, 1000);
    const rb = pool.run(b!.fn, 1000);
    await tick();
    t.fire();
    expect(await rb).toEqual({ ran: false });
    const rc = pool.run(c!.fn, 1000);
    a!.finish();
    await tick();
    expect(started).toEqual(['a', 'c']);
    c!.finish();
    expect([await ra, await rc]).toEqual([
      { ran: true, value: 'a' },
      { ran: true, value: 'c' },
    ]);
  });

  it('frees the slot when the task throws', async () => {
    const pool = new SlotPool(1, manualTimer().timer);
    await expect(pool.run(() => Promise.reject(new Error('boom')), 1000)).rejects.toThrow('boom');
    expect(await pool.run(async () => 1, 1000)).toEqual({ ran: true, value: 1 });
  });
});
