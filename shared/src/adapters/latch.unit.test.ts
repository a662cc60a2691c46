import { describe, expect, it } from 'vitest';
import { retainedBytes } from '../testing/retained-heap.js';
import { Latch } from './latch.js';

const settledOf = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('Latch', () => {
  it('resolves everyone waiting, and anyone who asks afterwards at once', async () => {
    const latch = new Latch<number>();
    const a = latch.wait(new AbortController().signal);
    const b = latch.within(60_000, () => new Error('late'));
    expect(latch.waiting).toBe(2);
    latch.resolve(7);
    latch.resolve(8);
    expect(await a).toBe(7);
    expect(await b).toBe(7);
    expect(latch.settled).toBe(true);
    expect(latch.waiting).toBe(0);
    expect(await latch.within(0, () => new Error('late'))).toBe(7);
  });

  it('passes a rejection on to everyone waiting and everyone after', async () => {
    const latch = new Latch();
    const waiting = settledOf(latch.wait(new AbortController().signal));
    latch.reject(new Error('read failed'));
    expect(await waiting).toEqual({ error: new Error('read failed') });
    expect(await settledOf(latch.wait(new AbortController().signal))).toEqual({
      error: new Error('read failed'),
    });
  });

  it('follows a promise: its outcome, whichever it is', async () => {
    const ok = Latch.following(Promise.resolve('done'));
    expect(await ok.wait(new AbortController().signal)).toBe('done');
    const failed = Latch.following(Promise.reject(new Error('no')));
    expect(await settledOf(failed.wait(new AbortController().signal))).toEqual({ error: new Error('no') });
  });

  it('a caller that gives up gets its own reason, is forgotten, and the others still get the outcome', async () => {
    const latch = new Latch<string>();
    const quitter = new AbortController();
    const gaveUp = settledOf(latch.wait(quitter.signal));
    const timedOut = settledOf(latch.within(5, () => new Error('not loaded after 5 ms')));
    const stays = latch.wait(new AbortController().signal);
    quitter.abort(new Error('no longer needed'));
    expect(await gaveUp).toEqual({ error: new Error('no longer needed') });
    expect(await timedOut).toEqual({ error: new Error('not loaded after 5 ms') });
    expect(latch.waiting).toBe(1);
    latch.resolve('loaded');
    expect(await stays).toBe('loaded');
    const already = new AbortController();
    already.abort(new Error('before asking'));
    expect(await settledOf(new Latch().wait(already.signal))).toEqual({ error: new Error('before asking') });
  });

  it('callers that gave up leave nothing behind on a latch that never settles', {
    timeout: 60_000,
  }, async () => {
    // What Promise.race against a promise that stays pending does not do: a reaction per call (~600 bytes)
    // until the promise settles — for an API replica whose Firestore never answers, never.
    const latch = new Latch();
    const calls = 5_000;
    const retained = await retainedBytes(async () => {
      await Promise.allSettled(
        Array.from({ length: calls }, () => latch.within(1, () => new Error('not loaded'))),
      );
    });
    expect(latch.waiting).toBe(0);
    expect(retained / calls).toBeLessThan(100);
  });
});
