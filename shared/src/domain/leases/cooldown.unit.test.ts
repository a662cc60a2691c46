import { describe, expect, it } from 'vitest';
import {
  type CooldownIndex,
  type CooldownMark,
  cooldownEnd,
  cooldownFor,
  cooldownsOf,
  cooldownTarget,
  cooldownWriteDue,
  isCoolingDown,
} from './cooldown.js';
import { at, UID } from './fixtures.unit.js';
import { GLOBAL_TARGET } from './model.js';

/** The uid of a proxy created again under the name of the one that had UID. */
const NEW = '11111111-1111-4111-8111-111111111111';

const settings = { cooldownWindowMs: 60_000 };

describe('cooldownTarget falls back report → lease → global', () => {
  it.each([
    { report: 'a.example', lease: 'b.example', target: 'a.example' },
    { report: undefined, lease: 'b.example', target: 'b.example' },
    { report: undefined, lease: null, target: GLOBAL_TARGET },
    { report: 'a.example', lease: null, target: 'a.example' },
    // A site is its host: the port is dropped (an IPv6 literal keeps its brackets).
    { report: 'a.example:8443', lease: 'b.example', target: 'a.example' },
    { report: undefined, lease: 'b.example:443', target: 'b.example' },
    { report: '[2001:db8::1]:443', lease: null, target: '[2001:db8::1]' },
    { report: '[2001:db8::1]', lease: null, target: '[2001:db8::1]' },
  ])('report $report, lease $lease → $target', ({ report, lease, target }) => {
    expect(cooldownTarget(report, lease)).toBe(target);
  });
});

describe('cooldownFor', () => {
  const lease = { id: 'L', proxy: 'p1', proxyUid: UID, target: 'site.example' };
  it.each([
    { result: 'ok' as const, cooldown: null },
    { result: 'rate_limited' as const, cooldown: { target: 'site.example', until: at(160) } },
    { result: 'banned' as const, cooldown: { target: 'site.example', until: at(160) } },
  ])('$result', ({ result, cooldown }) => {
    const got = cooldownFor(lease, { result }, settings, at(100));
    if (cooldown === null) expect(got).toBeNull();
    else
      expect(got).toEqual({
        proxy: 'p1',
        proxyUid: UID,
        ...cooldown,
        reason: result,
        leaseId: 'L',
        reportedAt: at(100),
      });
  });

  it('records the instance of the lease, or none for a lease stored before uids were kept', () => {
    const report = { result: 'banned' as const };
    expect(cooldownFor(lease, report, settings, at(100))?.proxyUid).toBe(UID);
    expect(cooldownFor({ ...lease, proxyUid: null }, report, settings, at(100))?.proxyUid).toBeNull();
  });
});

describe('cooldownEnd: when the proxy is leasable again for the target as far as cooldowns go', () => {
  /** The one cooldown document held for a site. */
  const mark = (until: Date, proxyUid: string | null = UID): ReadonlyMap<string, CooldownMark> =>
    new Map([['doc', { until, proxyUid }]]);
  const index: CooldownIndex = new Map([
    ['p1', new Map([['a.example', mark(at(200))]])],
    // Both a proxy-wide one and the target's: the later end is when both are over.
    [
      'p2',
      new Map([
        [GLOBAL_TARGET, mark(at(300))],
        ['a.example', mark(at(200))],
      ]),
    ],
    [
      'p3',
      new Map([
        [GLOBAL_TARGET, mark(at(200))],
        ['a.example', mark(at(400))],
      ]),
    ],
    ['p4', new Map([['a.example', mark(at(400), NEW)]])],
  ]);
  it.each([
    { proxy: 'p1', target: 'a.example', now: 150, end: 200 },
    { proxy: 'p1', target: 'b.example', now: 150, end: null },
    // The site's cooldown holds on any port of it.
    { proxy: 'p1', target: 'a.example:443', now: 150, end: 200 },
    { proxy: 'p1', target: 'a.example:8443', now: 150, end: 200 },
    { proxy: 'p2', target: 'a.example', now: 150, end: 300 },
    { proxy: 'p2', target: null, now: 150, end: 300 },
    { proxy: 'p3', target: 'a.example', now: 150, end: 400 },
    { proxy: 'p3', target: 'a.example', now: 250, end: 400 },
    { proxy: 'p3', target: 'b.example', now: 150, end: 200 },
    { proxy: 'p3', target: 'b.example', now: 200, end: null },
    // A cooldown of another instance of the name holds nothing for this one.
    { proxy: 'p4', target: 'a.example', now: 150, end: null },
  ])('$proxy for $target at +$now s → $end', ({ proxy, target, now, end }) => {
    expect(cooldownEnd(index, { name: proxy, uid: UID }, target, at(now))).toEqual(
      end === null ? null : at(end),
    );
  });
});

describe('isCoolingDown', () => {
  /** The one cooldown document held for a site. */
  const mark = (until: Date, proxyUid: string | null = UID): ReadonlyMap<string, CooldownMark> =>
    new Map([['doc', { until, proxyUid }]]);
  const index: CooldownIndex = new Map([
    ['p1', new Map([['a.example', mark(at(200))]])],
    ['p2', new Map([[GLOBAL_TARGET, mark(at(200))]])],
    ['p3', new Map([['a.example', mark(at(100))]])],
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
    expect(isCoolingDown(index, { name: proxy, uid: UID }, target, at(now))).toBe(cooling);
  });

  it('a cooldown of a deleted proxy does not cool down the one created again under its name', () => {
    const old = new Map([
      ['p1', new Map([['a.example', mark(at(200))]])],
      ['p2', new Map([[GLOBAL_TARGET, mark(at(200))]])],
    ]);
    for (const name of ['p1', 'p2']) {
      expect(isCoolingDown(old, { name, uid: UID }, 'a.example', at(150)), name).toBe(true);
      expect(isCoolingDown(old, { name, uid: NEW }, 'a.example', at(150)), name).toBe(false);
    }
  });

  it('a cooldown stored without a uid cools down whatever proxy has the name (compatibility)', () => {
    const legacy = new Map([
      ['p1', new Map([['a.example', mark(at(200), null)]])],
      ['p2', new Map([[GLOBAL_TARGET, mark(at(200), null)]])],
    ]);
    expect(isCoolingDown(legacy, { name: 'p1', uid: NEW }, 'a.example', at(150))).toBe(true);
    expect(isCoolingDown(legacy, { name: 'p2', uid: NEW }, null, at(150))).toBe(true);
    expect(isCoolingDown(legacy, { name: 'p1', uid: NEW }, 'a.example', at(200))).toBe(false);
  });
});

describe('cooldownWriteDue: a report rewrites a running cooldown only a step (a tenth of the window) on', () => {
  const next = at(400);
  it.each<[string, Date | null, number, boolean]>([
    ['none running', null, 300_000, true],
    ['one running to the same end', at(400), 300_000, false],
    ['one ending within the step (30 s of 300)', at(371), 300_000, false],
    ['one ending more than a step before', at(369), 300_000, true],
    ['one ending later (a longer one running)', at(900), 300_000, false],
    ['a short window: a step of at least a second', at(399.5), 2_000, false],
  ])('%s', (_n, running, windowMs, due) => expect(cooldownWriteDue(running, next, windowMs)).toBe(due));
});

describe('cooldownsOf', () => {
  it('keeps the cooldowns of the proxy’s name and uid, and those stored without a uid', () => {
    const all = [
      { proxy: 'p1', proxyUid: UID, target: 'old-instance' },
      { proxy: 'p1', proxyUid: NEW, target: 'this-instance' },
      { proxy: 'p1', proxyUid: null, target: 'legacy' },
      { proxy: 'p2', proxyUid: NEW, target: 'other-name' },
    ];
    expect(cooldownsOf(all, { name: 'p1', uid: NEW }).map((c) => c.target)).toEqual([
      'this-instance',
      'legacy',
    ]);
    expect(cooldownsOf(all, { name: 'p1', uid: UID }).map((c) => c.target)).toEqual([
      'old-instance',
      'legacy',
    ]);
  });
});
