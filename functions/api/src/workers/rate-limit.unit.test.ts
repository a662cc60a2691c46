import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limit.js';

describe('RateLimiter', () => {
  it('allows the burst, then refills at the rate', () => {
    let t = 0;
    const rl = new RateLimiter(() => t);
    const spec = { perSecond: 2, burst: 3 };
    expect([1, 2, 3, 4].map(() => rl.take('k', spec).ok)).toEqual([true, true, true, false]);
    expect(rl.take('k', spec)).toEqual({ ok: false, retryAfterSeconds: 1 });
    t = 500;
    expect(rl.take('k', spec).ok).toBe(true);
    expect(rl.take('other', spec).ok).toBe(true);
  });
  it('stays bounded in memory', () => {
    const rl = new RateLimiter(() => 0, 2);
    const spec = { perSecond: 1, burst: 1 };
    rl.take('a', spec);
    rl.take('b', spec);
    rl.take('c', spec); // evicts a
    expect(rl.take('a', spec).ok).toBe(true);
  });
});
