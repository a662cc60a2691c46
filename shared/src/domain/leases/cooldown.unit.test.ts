import { describe, expect, it } from 'vitest';
import { type CooldownIndex, cooldownFor, cooldownTarget, isCoolingDown } from './cooldown.js';
import { at } from './fixtures.unit.js';
import { GLOBAL_TARGET } from './model.js';

const settings = { cooldownWindowMs: 60_000 };

describe('cooldownTarget falls back report → lease → global', () => {
  it.each([
    { report: 'a.example', lease: 'b.example', target: 'a.example' },
    { report: undefined, lease: 'b.example', target: 'b.example' },
    { report: undefined, lease: null, target: GLOBAL_TARGET },
    { report: 'a.example', lease: null, target: 'a.example' },
  ])('report $report, lease $lease → $target', ({ report, lease, target }) => {
    expect(cooldownTarget(report, lease)).toBe(target);
  });
});

describe('cooldownFor', () => {
  const lease = { id: 'L', proxy: 'p1', target: 'site.example' };
  it.each([
    { result: 'ok' as const, cooldown: null },
    { result: 'rate_limited' as const, cooldown: { target: 'site.example', until: at(160) } },
    { result: 'banned' as const, cooldown: { target: 'site.example', until: at(160) } },
  ])('$result', ({ result, cooldown }) => {
    const got = cooldownFor(lease, { result }, settings, at(100));
    if (cooldown === null) expect(got).toBeNull();
    else expect(got).toEqual({ proxy: 'p1', ...cooldown, reason: result, leaseId: 'L', reportedAt: at(100) });
  });
});

describe('isCoolingDown', () => {
  const index: CooldownIndex = new Map([
    ['p1', new Map([['a.example', at(200)]])],
    ['p2', new Map([[GLOBAL_TARGET, at(200)]])],
    ['p3', new Map([['a.example', at(100)]])],
  ]);
  it.each([
    { proxy: 'p1', target: 'a.example', now: 150, cooling: true },
    { proxy: 'p1', target: 'b.example', now: 150, cooling: false },
    { proxy: 'p1', target: null, now: 150, cooling: false },
    { proxy: 'p1', target: 'a.example', now: 200, cooling: false },
    { proxy: 'p2', target: 'a.example', now: 150, cooling: true },
    { proxy: 'p2', target: null, now: 150, cooling: true },
    { proxy: 'p2', target: null, now: 201, cooling: false },
    { proxy: 'p3', target: 'a.example', now: 150, cooling: false },
    { proxy: 'none', target: 'a.example', now: 150, cooling: false },
  ])('$proxy for $target at +$now s → $cooling', ({ proxy, target, now, cooling }) => {
    expect(isCoolingDown(index, proxy, target, at(now))).toBe(cooling);
  });
});
