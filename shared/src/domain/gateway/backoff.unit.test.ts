import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay } from './backoff.js';

const policy = { initialMs: 500, maxMs: 30_000 };

describe('backoffDelay', () => {
  it.each([
    // attempt, random, delay
    [0, 0, 250],
    [0, 0.999999, 500],
    [1, 0, 500],
    [1, 0.5, 750],
    [3, 0, 2_000],
    [3, 0.999999, 4_000],
    [6, 0, 15_000],
    [6, 0.999999, 30_000],
    [7, 0, 15_000],
    [1_000, 0.999999, 30_000],
  ])('attempt %i with random %d → %i ms', (attempt, random, delay) => {
    expect(backoffDelay(attempt, policy, random)).toBe(delay);
  });

  it('is never below half the step nor above the cap, whatever the random source says', () => {
    for (const random of [-1, 0, 0.3, 1, 2, Number.NaN]) {
      for (let attempt = 0; attempt < 20; attempt++) {
        const cap = Math.min(policy.maxMs, policy.initialMs * 2 ** attempt);
        const d = backoffDelay(attempt, policy, random);
        expect(d).toBeGreaterThanOrEqual(cap / 2);
        expect(d).toBeLessThanOrEqual(cap);
      }
    }
  });
});

describe('Backoff', () => {
  it('grows per attempt and starts over after reset()', () => {
    const b = new Backoff(policy, () => 0);
    expect([b.next(), b.next(), b.next()]).toEqual([250, 500, 1_000]);
    expect(b.attempt).toBe(3);
    b.reset();
    expect(b.next()).toBe(250);
  });

  it('spreads a fleet that failed at once: different random draws, different delays', () => {
    const draws = [0.1, 0.5, 0.9];
    const delays = draws.map((r) => new Backoff(policy, () => r).next());
    expect(new Set(delays).size).toBe(3);
  });
});
