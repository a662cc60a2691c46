import { describe, expect, it } from 'vitest';
import { RateLimiter } from './token-bucket.js';

const spec = { perSecond: 2, burst: 4 };

describe('RateLimiter.peek', () => {
  it('answers what take() would, without taking a token or adding the key', () => {
    let t = 0;
    const rl = new RateLimiter(() => t);
    expect(rl.peek('a', spec)).toEqual({ ok: true });
    expect(rl.size).toBe(0);
    for (let i = 0; i < 4; i++) expect(rl.take('a', spec).ok).toBe(true);
    expect(rl.peek('a', spec)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(rl.peek('a', spec)).toEqual({ ok: false, retryAfterSeconds: 1 });
    t = 500; // one token back: peeking leaves it there
    expect(rl.peek('a', spec)).toEqual({ ok: true });
    expect(rl.peek('a', spec)).toEqual({ ok: true });
    expect(rl.take('a', spec).ok).toBe(true);
    expect(rl.peek('a', spec).ok).toBe(false);
  });

  it('says how long until a token, in whole seconds', () => {
    const rl = new RateLimiter(() => 0);
    const slow = { perSecond: 0.1, burst: 1 };
    rl.take('a', slow);
    expect(rl.peek('a', slow)).toEqual({ ok: false, retryAfterSeconds: 10 });
  });
});

describe('RateLimiter forgets buckets that have filled up again', () => {
  it('drops an idle key once its bucket is full, not before', () => {
    let t = 0;
    const rl = new RateLimiter(() => t);
    rl.take('idle', spec); // 3 of 4 left: full again after 500 ms
    t = 499;
    rl.take('busy', spec);
    expect(rl.size).toBe(2);
    t = 500;
    rl.take('busy', spec);
    expect(rl.size).toBe(1);
    // forgetting changed nothing that take() answers: a new bucket starts full
    for (let i = 0; i < 4; i++) expect(rl.take('idle', spec).ok).toBe(true);
    expect(rl.take('idle', spec).ok).toBe(false);
  });

  it('keeps an empty bucket until it has refilled', () => {
    let t = 0;
    const rl = new RateLimiter(() => t);
    for (let i = 0; i < 5; i++) rl.take('a', spec); // the fifth refused: 0 left, full at 2 s
    t = 1999;
    rl.take('b', spec);
    expect(rl.peek('a', spec).ok).toBe(true);
    expect(rl.size).toBe(2);
    t = 2000;
    rl.take('b', spec);
    expect(rl.size).toBe(1);
  });
});
