import { describe, expect, it } from 'vitest';
import { RateLimiter, SWEEP_INTERVAL_MS } from './token-bucket.js';

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

describe('RateLimiter.charge', () => {
  it('spends a token the bucket no longer has: the bucket owes it, all of it', () => {
    let t = 0;
    const rl = new RateLimiter(() => t);
    for (let i = 0; i < 6; i++) rl.charge('a', spec); // 4 - 6 = -2
    expect(rl.peek('a', spec)).toEqual({ ok: false, retryAfterSeconds: 2 }); // 3 tokens at 2 a second
    t = 1000; // 0 tokens
    expect(rl.peek('a', spec).ok).toBe(false);
    t = 1500;
    expect(rl.peek('a', spec).ok).toBe(true);
    // no floor: 84 charged, 80 owed, so over time the rate is still 2 a second
    for (let i = 0; i < 84; i++) rl.charge('b', spec);
    expect(rl.peek('b', spec)).toEqual({ ok: false, retryAfterSeconds: 41 });
    t += 40_499;
    expect(rl.peek('b', spec).ok).toBe(false);
    t += 1;
    expect(rl.peek('b', spec).ok).toBe(true);
  });

  it('where take() charges only the first of requests that passed at the last token', () => {
    const rl = new RateLimiter(() => 0);
    for (let i = 0; i < 3; i++) rl.take('a', spec);
    for (let i = 0; i < 3; i++) rl.take('a', spec); // one token left: the first takes it, the rest nothing
    expect(rl.peek('a', spec)).toEqual({ ok: false, retryAfterSeconds: 1 });
    for (let i = 0; i < 3; i++) rl.take('b', spec);
    for (let i = 0; i < 3; i++) rl.charge('b', spec); // -2
    expect(rl.peek('b', spec)).toEqual({ ok: false, retryAfterSeconds: 2 });
  });
});

describe('RateLimiter past maxKeys', () => {
  const one = { perSecond: 1, burst: 1 };

  it('evict-stalest (the default): a new key evicts the stalest, whose next request starts afresh', () => {
    const rl = new RateLimiter(() => 0, 2);
    rl.take('a', one);
    rl.take('b', one);
    rl.take('c', one);
    expect(rl.size).toBe(2);
    expect(rl.take('a', one).ok).toBe(true);
  });

  it('share-overflow: spent buckets stay, and new keys share one bucket until one has refilled', () => {
    let t = 0;
    const rl = new RateLimiter(() => t, 2, 'share-overflow');
    expect(rl.take('a', one).ok).toBe(true);
    expect(rl.take('b', one).ok).toBe(true);
    expect(rl.take('c', one).ok).toBe(true); // the overflow bucket's token
    expect(rl.take('d', one)).toEqual({ ok: false, retryAfterSeconds: 1, shared: true }); // …shared: spent
    expect(rl.take('a', one).ok).toBe(false); // not evicted by c or d
    expect(rl.size).toBe(3); // a, b and the overflow bucket
    t = 1000; // all full again: forgotten, so room for new keys of their own
    expect(rl.take('e', one).ok).toBe(true);
    expect(rl.take('f', one).ok).toBe(true);
    expect(rl.take('g', one).ok).toBe(true); // the overflow bucket afresh
    expect(rl.take('h', one).ok).toBe(false);
  });

  it('share-overflow: refilled buckets behind a stalest one still spent are swept to make room', () => {
    let t = 0;
    const rl = new RateLimiter(() => t, 3, 'share-overflow');
    for (let i = 0; i < 5; i++) rl.charge('deep', one); // -4: full again at 5 s, and the stalest
    rl.charge('b', one); // full again at 1 s
    rl.charge('c', one);
    t = 1000; // b and c refilled, behind deep, which forgetting-from-the-stalest stops at
    expect(rl.peek('new', one)).toEqual({ ok: true });
    rl.charge('new', one);
    expect(rl.peek('new', one).ok).toBe(false); // its own bucket, not the overflow one
    expect(rl.peek('deep', one).ok).toBe(false); // a spent bucket is never what makes room
    expect(rl.size).toBe(2);
  });

  it('share-overflow: a sweep that finds no room is not repeated within SWEEP_INTERVAL_MS', () => {
    expect(SWEEP_INTERVAL_MS).toBe(100);
    let t = 0;
    const rl = new RateLimiter(() => t, 2, 'share-overflow');
    for (let i = 0; i < 3; i++) rl.charge('a', one); // full again at 3 s
    rl.charge('b', one); // full again at 1 s, behind a
    t = 500;
    rl.charge('c', one); // no room (b not refilled yet): the overflow bucket, spent
    t = 950; // a sweep, finding nothing
    expect(rl.peek('d', one)).toEqual({ ok: false, retryAfterSeconds: 1, shared: true });
    t = 1000; // b has refilled, but the last sweep was 50 ms ago
    expect(rl.peek('d', one)).toEqual({ ok: false, retryAfterSeconds: 1, shared: true });
    t = 1050; // a sweep is due again: b's room goes to d
    expect(rl.peek('d', one)).toEqual({ ok: true });
    expect(rl.size).toBe(2); // a and the overflow bucket; d holds nothing until charged
  });

  it('share-overflow: peek() and charge() answer a new key past maxKeys by the overflow bucket', () => {
    const rl = new RateLimiter(() => 0, 1, 'share-overflow');
    rl.charge('a', one);
    expect(rl.peek('b', one).ok).toBe(true);
    rl.charge('b', one);
    expect(rl.peek('c', one).ok).toBe(false);
    expect(rl.peek('a', one).ok).toBe(false);
    expect(rl.size).toBe(2);
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
    expect(rl.size).toBe(2); // a: 3.998 tokens, not yet full
    t = 2000;
    rl.take('b', spec);
    expect(rl.size).toBe(1);
  });
});
