import { describe, expect, it } from 'vitest';
import { PublishMemory } from './publish-memory.js';

const MIN = 60_000;
const TTL = 5 * MIN;

/** The minutes (from 0) at which a proxy due at `at` the whole time is published, polled every minute. */
function publishedAt(memory: PublishMemory, minutes: number, at = 0): number[] {
  const out: number[] = [];
  for (let m = 0; m <= minutes; m++) if (memory.claim('p1', at, m * MIN)) out.push(m);
  return out;
}

describe('PublishMemory', () => {
  it('past 50,000 claims held it drops the expired ones, scanning at most once per tenth of the ttl', () => {
    const memory = new PublishMemory(TTL);
    for (let i = 0; i < 50_000; i++) memory.claim(`old-${i}`, 0, 0);
    // A fleet larger than the cap, still held: each further claim would find nothing to drop.
    for (let i = 0; i < 2_000; i++) memory.claim(`held-${i}`, 0, MIN);
    expect(memory.scans).toBe(1);
    for (let i = 0; i < 2_000; i++) memory.claim(`more-${i}`, 0, MIN + TTL / 10);
    expect(memory.scans).toBe(2);
    // The old ones' hold is over: the next scan drops them, and they are claimable again.
    memory.claim('late', 0, TTL + MIN);
    expect(memory.scans).toBe(3);
    expect(memory.claim('old-1', 0, TTL + MIN)).toBe(true);
  });

  it('publishes a due proxy once, then again after the ttl: its message may have been lost', () => {
    const memory = new PublishMemory(TTL);
    expect(publishedAt(memory, 9)).toEqual([0, 5]);
  });

  it('a proxy that stays due at the same time is held twice as long each time, up to 16 × the ttl', () => {
    // A pass failing through a provider outage: Pub/Sub retries each publish by itself for ~90 minutes,
    // so a new retry chain every 5 minutes would only multiply the failing passes.
    const memory = new PublishMemory(TTL);
    expect(publishedAt(memory, 240)).toEqual([0, 5, 15, 35, 75, 155, 235]);
  });

  it('a new due time starts over: each pass that moves it is a new request', () => {
    const memory = new PublishMemory(TTL);
    expect(publishedAt(memory, 20)).toEqual([0, 5, 15]);
    expect(memory.claim('p1', 21 * MIN, 21 * MIN)).toBe(true);
    expect(memory.claim('p1', 21 * MIN, 25 * MIN)).toBe(false);
    expect(memory.claim('p1', 21 * MIN, 26 * MIN)).toBe(true);
  });

  it('a claim released (its publish failed) is claimable at once, and does not count as a publish', () => {
    const memory = new PublishMemory(TTL);
    expect(memory.claim('p1', 0, 0)).toBe(true);
    expect(memory.claim('p1', 0, 5 * MIN)).toBe(true); // the second publish (held 10 minutes)…
    memory.release('p1'); // …failed
    expect(memory.claim('p1', 0, 5 * MIN + 1)).toBe(true); // sent again at once, as the second
    expect(memory.claim('p1', 0, 14 * MIN)).toBe(false);
    expect(memory.claim('p1', 0, 16 * MIN)).toBe(true);
    memory.release('p1');
    memory.release('p1');
    memory.release('p1'); // the first one's release forgets the proxy
    expect(memory.claim('p1', 0, 16 * MIN + 1)).toBe(true);
    expect(memory.claim('p1', 0, 16 * MIN + 2)).toBe(false);
  });
});
