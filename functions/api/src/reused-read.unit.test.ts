import { describe, expect, it } from 'vitest';
import { reusedRead } from './reused-read.js';

describe('reusedRead', () => {
  it('one read per interval, shared by the scrapes that come while it runs', async () => {
    let reads = 0;
    let now = 0;
    const read = reusedRead(async () => ++reads, { maxAgeMs: 1_000, nowMs: () => now, onError: () => {} });
    expect(await Promise.all([read(), read()])).toEqual([1, 1]);
    now = 999;
    expect(await read()).toBe(1);
    now = 1_000;
    expect(await read()).toBe(2);
  });

  it('a scrape waits on a read that stalls at most waitMs, then takes the last value; the read still counts when it lands', async () => {
    let answer: ((n: number) => void) | null = null;
    let now = 0;
    let reads = 0;
    const read = reusedRead(
      () => {
        reads++;
        if (reads === 1) return Promise.resolve(7);
        return new Promise<number>((resolve) => (answer = resolve));
      },
      { maxAgeMs: 1_000, nowMs: () => now, onError: () => {}, waitMs: 20 },
    );
    expect(await read()).toBe(7);
    now = 1_000;
    // Unbounded, these never answered (the test's timeout would end it).
    expect(await read()).toBe(7);
    expect(await read()).toBe(7);
    expect(reads).toBe(2);
    answer!(8);
    await Promise.resolve();
    await Promise.resolve();
    expect(await read()).toBe(8);
  });
});
