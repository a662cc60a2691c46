import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../log/json-logger.js';
import { COOLDOWN_PRUNE_EVERY_MS, LeaseCooldownCache } from './lease-cooldown-cache.js';

const UID = '00000000-0000-4000-8000-000000000000';
/** Both clocks at `now()`: a monotonic clock and a wall clock that agree (nobody steps the wall one). */
const together = (now: () => number) => ({ monotonicNow: now, wallNow: now });
const mark = (proxy: string, target: string, untilMs: number) => ({
  proxy,
  proxyUid: UID,
  target,
  until: new Date(untilMs),
});

describe('LeaseCooldownCache holds the running cooldowns, not their history', () => {
  it('forgets ended cooldowns at the next change a minute on, not when TTL deletes their documents a day later', () => {
    let now = 1_000_000;
    const cache = new LeaseCooldownCache(
      memoryLogger(),
      together(() => now),
    );
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

  it('sweeps a minute on, on the monotonic clock, while the wall clock is stepped back an hour', () => {
    // On the wall clock, a step back (NTP; the clock ran an hour ahead) held every sweep off for that hour.
    const t = { mono: 5_000, wall: Date.parse('2026-03-01T01:00:00Z') };
    const cache = new LeaseCooldownCache(memoryLogger(), {
      monotonicNow: () => t.mono,
      wallNow: () => t.wall,
    });
    cache.apply([]); // a sweep: the next is a minute on
    t.wall -= 3_600_000;
    // Reported since (here or by replicas whose clocks were right): they end by the wall clock as it is now.
    for (let i = 0; i < 50; i++) cache.put(`p${i}__a`, mark(`p${i}`, 'a.example', t.wall + 10_000));
    cache.put('live__a', mark('live', 'a.example', t.wall + 3_600_000));
    t.mono += 10_000 + COOLDOWN_PRUNE_EVERY_MS;
    t.wall += 10_000 + COOLDOWN_PRUNE_EVERY_MS;
    cache.apply([]);
    expect(cache.size).toBe(1);
    expect(cache.coolingDown({ name: 'live', uid: UID }, 'a.example', new Date(t.wall))).toBe(true);
  });
});

describe('LeaseCooldownCache holds a cooldown for its site', () => {
  it("one stored under its target with a port (before cooldowns were the site's) holds for the host, beside a newer one", () => {
    const now = 1_000_000;
    const cache = new LeaseCooldownCache(
      memoryLogger(),
      together(() => now),
    );
    const at = (ms: number) => new Date(ms);
    const p = { name: 'p1', uid: UID };
    // Written by the previous version: the target as given, port and all.
    cache.put('p1__old', mark('p1', 'site.example:443', now + 60_000));
    for (const target of ['site.example', 'site.example:443', 'site.example:8443'])
      expect(cache.cooldownEnd(p, target, at(now)), target).toEqual(at(now + 60_000));
    expect(cache.coolingDown(p, 'other.example', at(now))).toBe(false);
    // Reported since, under the site: the later end holds, whichever document it is in.
    cache.put('p1__new', mark('p1', 'site.example', now + 30_000));
    expect(cache.cooldownEnd(p, 'site.example', at(now))).toEqual(at(now + 60_000));
    expect(cache.size).toBe(2);
    // One document going leaves the other's cooldown.
    cache.apply([{ type: 'removed', doc: { id: 'p1__old' } } as never]);
    expect(cache.cooldownEnd(p, 'site.example:443', at(now))).toEqual(at(now + 30_000));
    cache.apply([{ type: 'removed', doc: { id: 'p1__new' } } as never]);
    expect(cache.coolingDown(p, 'site.example', at(now))).toBe(false);
    expect(cache.size).toBe(0);
  });
});

describe('LeaseCooldownCache: two documents of one site, of two instances of the name', () => {
  it("each holds for its own instance: an older instance's later end does not hide the current one's", () => {
    const now = 1_000_000;
    const cache = new LeaseCooldownCache(
      memoryLogger(),
      together(() => now),
    );
    const OTHER = '11111111-1111-4111-8111-111111111111';
    cache.put('old', {
      proxy: 'p1',
      proxyUid: OTHER,
      target: 's.example:443',
      until: new Date(now + 60_000),
    });
    cache.put('new', { proxy: 'p1', proxyUid: UID, target: 's.example', until: new Date(now + 30_000) });
    expect(cache.cooldownEnd({ name: 'p1', uid: UID }, 's.example', new Date(now))).toEqual(
      new Date(now + 30_000),
    );
    expect(cache.cooldownEnd({ name: 'p1', uid: OTHER }, 's.example', new Date(now))).toEqual(
      new Date(now + 60_000),
    );
  });
});
