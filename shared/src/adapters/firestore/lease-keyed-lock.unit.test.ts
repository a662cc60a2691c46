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
