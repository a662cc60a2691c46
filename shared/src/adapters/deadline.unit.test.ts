import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../ports/clock.js';
import { withDeadlineAt } from './deadline.js';

describe('withDeadlineAt (a bound on a call, to an absolute end)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('gives the call the time left until the end, as measured on the clock when called', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const end = clock.now().getTime() + 10_000;
    clock.advance(3_000);
    let error: unknown;
    withDeadlineAt(new Promise(() => {}), end, clock, (ms) => new Error(`no answer within ${ms} ms`)).catch(
      (e: unknown) => {
        error = e;
      },
    );
    await vi.advanceTimersByTimeAsync(6_999);
    expect(error).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect((error as Error).message).toBe('no answer within 7000 ms');
  });

  it('gives none once the end has passed, and passes on an answer in time', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const past = withDeadlineAt(
      new Promise(() => {}),
      clock.now().getTime() - 5_000,
      clock,
      (ms) => new Error(`within ${ms} ms`),
    );
    const rejected = expect(past).rejects.toThrow('within 0 ms');
    await vi.advanceTimersByTimeAsync(0);
    await rejected;
    await expect(
      withDeadlineAt(Promise.resolve('ok'), clock.now().getTime() + 1_000, clock, () => new Error('late')),
    ).resolves.toBe('ok');
  });
});
