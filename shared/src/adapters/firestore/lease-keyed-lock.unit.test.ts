import { describe, expect, it } from 'vitest';
import { KeyedLock, PendingCounter } from './lease-keyed-lock.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('KeyedLock', () => {
  it('runs one task per key at a time, in arrival order, and other keys in parallel', async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const task = (key: string, name: string) =>
      lock.run(key, async () => {
        log.push(`${name}+`);
        await tick();
        log.push(`${name}-`);
        return name;
      });
    const results = await Promise.all([task('a', 'a1'), task('a', 'a2'), task('b', 'b1')]);
    expect(results).toEqual(['a1', 'a2', 'b1']);
    expect(log.indexOf('a1-')).toBeLessThan(log.indexOf('a2+'));
    expect(log.indexOf('b1+')).toBeLessThan(log.indexOf('a1-'));
  });

  it('keeps going after a failed task', async () => {
    const lock = new KeyedLock();
    await expect(lock.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await lock.run('a', async () => 'next')).toBe('next');
  });

  describe('with a wait deadline', () => {
    const wait = { ms: 20, error: () => new Error('turn not come') };
    const tails = (lock: KeyedLock) => (lock as unknown as { tails: Map<string, unknown> }).tails;
    /** A task on `key` that holds the lock until `finish()`. */
    function hold(lock: KeyedLock, key: string) {
      let finish!: () => void;
      const finished = new Promise<void>((r) => (finish = r));
      return { done: lock.run(key, () => finished), finish };
    }

    it('gives up a waiter whose turn has not come, without running it; the next still waits its turn', async () => {
      const lock = new KeyedLock();
      const holder = hold(lock, 'a');
      const ran: string[] = [];
      const gaveUp = lock.run('a', async () => ran.push('gave up'), wait);
      await expect(gaveUp).rejects.toThrow('turn not come');
      // Queued after the waiter gave up, while the holder still runs: it waits for the holder.
      const later = lock.run('a', async () => ran.push('later'));
      await tick();
      expect(ran).toEqual([]);
      holder.finish();
      await later;
      expect(ran).toEqual(['later']);
      expect(tails(lock).size).toBe(0);
    });

    it('forgets the key once the holder ahead of the last waiter, which gave up, is done', async () => {
      const lock = new KeyedLock();
      const holder = hold(lock, 'a');
      await expect(lock.run('a', async () => 'x', wait)).rejects.toThrow('turn not come');
      expect(tails(lock).size).toBe(1);
      holder.finish();
      await holder.done;
      await tick();
      expect(tails(lock).size).toBe(0);
    });

    it('runs a waiter whose turn comes in time', async () => {
      const lock = new KeyedLock();
      const holder = hold(lock, 'a');
      const next = lock.run('a', async () => 'next', { ...wait, ms: 1_000 });
      holder.finish();
      expect(await next).toBe('next');
      expect(tails(lock).size).toBe(0);
    });
  });
});

describe('PendingCounter', () => {
  it('counts work in flight per key, failures included', async () => {
    const pending = new PendingCounter();
    let release!: () => void;
    const held = pending.around('a', () => new Promise<void>((r) => (release = r)));
    const failed = pending.around('a', async () => Promise.reject(new Error('x'))).catch(() => {});
    expect(pending.get('a')).toBe(2);
    await failed;
    expect(pending.get('a')).toBe(1);
    release();
    await held;
    expect(pending.get('a')).toBe(0);
  });
});
