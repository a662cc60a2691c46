import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
import { COOLDOWN_PRUNE_EVERY_MS, LeaseCooldownCache } from './lease-cooldown-cache.js';

const UID = '00000000-0000-4000-8000-000000000000';
const mark = (proxy: string, target: string, untilMs: number) => ({
  proxy,
  proxyUid: UID,
  target,
  until: new Date(untilMs),
});

describe('LeaseCooldownCache holds the running cooldowns, not their history', () => {
  it('forgets ended cooldowns at the next change a minute on, not when TTL deletes their documents a day later', () => {
    let now = 1_000_000;
    const cache = new LeaseCooldownCache(memoryLogger(), () => now);
    for (let i = 0; i < 50; i++) cache.put(`p${i}__a`, mark(`p${i}`, 'a.example', now + 10_000));
    cache.put('live__a', mark('live', 'a.example', now + 3_600_000));
    cache.apply([]);
    expect(cache.size).toBe(51);

    now += 10_000 + COOLDOWN_PRUNE_EVERY_MS;
    cache.apply([]); // the next change the listener brings (none here: a TTL delete, another report)
    expect(cache.size).toBe(1);
    expect(cache.coolingDown({ name: 'live', uid: UID }, 'a.example', new Date(now))).toBe(true);
    expect(cache.coolingDown({ name: 'p0', uid: UID }, 'a.example', new Date(now))).toBe(false);

    // Reported again after the sweep: held again.
    cache.put('p0__a', mark('p0', 'a.example', now + 10_000));
    expect(cache.coolingDown({ name: 'p0', uid: UID }, 'a.example', new Date(now))).toBe(true);
  });
});
