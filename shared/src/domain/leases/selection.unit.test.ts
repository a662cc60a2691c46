import { describe, expect, it } from 'vitest';
import type { Usage } from './capacity.js';
import { type ProxyOptions, proxy, UID } from './fixtures.unit.js';
import { matchesSelector, planSelection, ranksBehind, type SelectionView } from './selection.js';

/** The i-th proxy of `cooling` cools down until COOL_END + i s. */
const COOL_END = Date.UTC(2026, 0, 1, 1);

function view(
  usage: Record<string, Partial<Usage>> = {},
  cooling: string[] = [],
  unusable: string[] = [],
  pending: Record<string, number> = {},
  gateway: string[] = [],
): SelectionView {
  return {
    heldByGateway: (p) => gateway.includes(p.name),
    usage: (p) => ({ active: 0, exclusive: false, ...usage[p.name] }),
    pending: (p) => pending[p] ?? 0,
    cooldownEndMs: (p, target) =>
      target !== null && cooling.includes(p.name) ? COOL_END + cooling.indexOf(p.name) * 1000 : null,
    unusable: (p) => unusable.includes(p),
  };
}

const HTTP = ['http'] as const;

const fleet = (specs: Record<string, ProxyOptions>) => Object.entries(specs).map(([n, o]) => proxy(n, o));

describe('matchesSelector', () => {
  const p = proxy('p', { attributes: { region: 'eu', tier: 'gold' } });
  it.each<{ selector: Record<string, string>; match: boolean }>([
    { selector: {}, match: true },
    { selector: { region: 'eu' }, match: true },
    { selector: { region: 'eu', tier: 'gold' }, match: true },
    { selector: { region: 'us' }, match: false },
    { selector: { region: 'eu', zone: 'x' }, match: false },
    { selector: { constructor: 'x' }, match: false },
  ])('$selector → $match', ({ selector, match }) => {
    expect(matchesSelector(p, selector)).toBe(match);
  });
});

describe('planSelection', () => {
  it.each<{
    name: string;
    proxies: ReturnType<typeof fleet>;
    usage: Record<string, Partial<Usage>>;
    order: string[];
  }>([
    {
      name: 'fewest active leases first',
      proxies: fleet({ a: {}, b: {}, c: {} }),
      usage: { a: { active: 1 }, b: { active: 0 }, c: { active: 1 } },
      order: ['b', 'a', 'c'],
    },
    {
      name: 'then latency (unknown latency last)',
      proxies: fleet({ a: { latencyMillis: null }, b: { latencyMillis: 80 }, c: { latencyMillis: 20 } }),
      usage: {},
      order: ['c', 'b', 'a'],
    },
    {
      name: 'then name',
      proxies: fleet({ zed: { latencyMillis: 5 }, alpha: { latencyMillis: 5 }, mid: { latencyMillis: 5 } }),
      usage: {},
      order: ['alpha', 'mid', 'zed'],
    },
    {
      name: 'SUSPECT after AVAILABLE, whatever its leases or latency',
      proxies: fleet({
        probeSuspect: { healthReason: 'ProbeSuspect', latencyMillis: 1 },
        passiveSuspect: { healthReason: 'PassiveSuspect' },
        busy: { latencyMillis: 900 },
      }),
      usage: { busy: { active: 1 } },
      order: ['busy', 'probeSuspect', 'passiveSuspect'],
    },
    {
      name: 'leases outrank latency',
      proxies: fleet({ fast: { latencyMillis: 1 }, slow: { latencyMillis: 900 } }),
      usage: { fast: { active: 1 } },
      order: ['slow', 'fast'],
    },
  ])('$name', ({ proxies, usage, order }) => {
    const plan = planSelection(
      proxies,
      { selector: {}, target: null, exclusive: false, protocols: HTTP },
      view(usage),
    );
    expect(plan.candidates.map((c) => c.name)).toEqual(order);
  });

  it('counts every considered proxy exactly once', () => {
    const proxies = fleet({
      off: { attributes: { region: 'us' } },
      sick: { attributes: { region: 'eu' }, healthy: 'False' },
      booting: { attributes: { region: 'eu' }, phase: 'Provisioning' },
      noip: { attributes: { region: 'eu' }, ip: null },
      badcreds: { attributes: { region: 'eu' } },
      cool: { attributes: { region: 'eu' } },
      full: { attributes: { region: 'eu' }, capacity: 1 },
      held: { attributes: { region: 'eu' }, capacity: 5 },
      ok: { attributes: { region: 'eu' }, capacity: 3 },
    });
    const plan = planSelection(
      proxies,
      { selector: { region: 'eu' }, target: 'site.example', exclusive: false, protocols: HTTP },
      view(
        { full: { active: 1 }, held: { active: 1, exclusive: true }, ok: { active: 2 } },
        ['cool'],
        ['badcreds'],
      ),
    );
    expect(plan).toEqual({
      candidates: [{ name: 'ok', uid: UID, capacity: 3, endpoint: 'http://10.0.0.1:3128' }],
      more: 0,
      full: ['full', 'held'],
      considered: 8,
      otherProtocol: 0,
      cordoned: 0,
      inGateway: 0,
      unhealthy: 4,
      inCooldown: 1,
      cooldownEndsAtMs: COOL_END,
      atCapacity: 2,
    });
  });

  it('says when the soonest of the cooldowns it counted ends (none counted: null)', () => {
    const proxies = [proxy('late'), proxy('soon'), proxy('free', { capacity: 1 })];
    const request = { selector: {}, target: 'site.example', exclusive: false, protocols: HTTP };
    const cooling = planSelection(proxies, request, view({ free: { active: 1 } }, ['late', 'soon']));
    expect(cooling).toMatchObject({ inCooldown: 2, atCapacity: 1, cooldownEndsAtMs: COOL_END });
    const reversed = planSelection(proxies, request, view({ free: { active: 1 } }, ['soon', 'late']));
    expect(reversed.cooldownEndsAtMs).toBe(COOL_END);
    const none = planSelection(proxies, request, view({ free: { active: 1 } }));
    expect(none).toMatchObject({ inCooldown: 0, cooldownEndsAtMs: null });
  });

  it.each<{ name: string; gateway: string[]; candidates: string[]; counts: Record<string, number> }>([
    {
      name: 'a proxy the gateway holds is never a candidate, however idle',
      gateway: ['idle'],
      candidates: ['busy'],
      counts: { considered: 3, inGateway: 1, unhealthy: 1, inCooldown: 0, atCapacity: 0 },
    },
    {
      name: 'held by the gateway outranks unhealthy (a reclaim is what frees it, not the probe)',
      gateway: ['sick'],
      candidates: ['idle', 'busy'],
      counts: { considered: 3, inGateway: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 },
    },
    {
      name: 'everything held: an empty plan whose counts still add up',
      gateway: ['idle', 'busy', 'sick'],
      candidates: [],
      counts: { considered: 3, inGateway: 3, unhealthy: 0, inCooldown: 0, atCapacity: 0 },
    },
  ])('$name', ({ gateway, candidates, counts }) => {
    const plan = planSelection(
      fleet({ idle: {}, busy: {}, sick: { healthy: 'False' } }),
      { selector: {}, target: null, exclusive: false, protocols: HTTP },
      view({ busy: { active: 1 } }, [], [], {}, gateway),
    );
    expect(plan.candidates.map((c) => c.name)).toEqual(candidates);
    expect(plan).toMatchObject(counts);
    const { cordoned, inGateway, unhealthy, inCooldown, atCapacity } = plan;
    expect(plan.candidates.length + cordoned + inGateway + unhealthy + inCooldown + atCapacity).toBe(
      plan.considered,
    );
  });

  describe('cordoned proxies (spec.cordoned)', () => {
    const request = { selector: {}, target: 'site.example', exclusive: false, protocols: HTTP };

    it('are never candidates, however idle and healthy, and are counted apart', () => {
      const plan = planSelection(
        fleet({ cordoned: { cordoned: true, latencyMillis: 1 }, busy: { latencyMillis: 900 } }),
        request,
        view({ busy: { active: 1 } }),
      );
      expect(plan.candidates.map((c) => c.name)).toEqual(['busy']);
      expect(plan).toMatchObject({ considered: 2, cordoned: 1, unhealthy: 0, inGateway: 0 });
    });

    it('the cordon is counted before every other reason, so the counts still add up', () => {
      const proxies = fleet({
        sick: { cordoned: true, healthy: 'False' },
        held: { cordoned: true },
        cool: { cordoned: true },
        full: { cordoned: true, capacity: 1 },
        badcreds: { cordoned: true },
        ok: {},
      });
      const plan = planSelection(
        proxies,
        request,
        view({ full: { active: 1 } }, ['cool'], ['badcreds'], {}, ['held']),
      );
      expect(plan).toMatchObject({
        candidates: [{ name: 'ok' }],
        full: [],
        considered: 6,
        cordoned: 5,
        inGateway: 0,
        unhealthy: 0,
        inCooldown: 0,
        cooldownEndsAtMs: null,
        atCapacity: 0,
      });
    });

    it('uncordoned (false, or a spec from before the field) is a candidate again', () => {
      const proxies = fleet({ back: { cordoned: false }, old: {} });
      // a document written before the field: the spec parser would fill it in, so take it out by hand
      delete (proxies[1]!.spec as { cordoned?: boolean }).cordoned;
      expect('cordoned' in proxies[1]!.spec).toBe(false);
      const plan = planSelection(proxies, request, view());
      expect(plan.candidates.map((c) => c.name)).toEqual(['back', 'old']);
      expect(plan.cordoned).toBe(0);
    });

    it('a cordoned proxy of another protocol is left out for its protocol, not counted as cordoned', () => {
      const plan = planSelection(
        fleet({ s: { cordoned: true, external: true, protocol: 'socks5' } }),
        request,
        view(),
      );
      expect(plan).toMatchObject({ considered: 0, otherProtocol: 1, cordoned: 0 });
    });
  });

  it('an exclusive request only considers empty proxies', () => {
    const plan = planSelection(
      fleet({ a: { capacity: 4 }, b: { capacity: 4 } }),
      { selector: {}, target: null, exclusive: true, protocols: HTTP },
      view({ a: { active: 1 } }),
    );
    expect(plan.candidates.map((c) => c.name)).toEqual(['b']);
    expect(plan.atCapacity).toBe(1);
  });

  it('grants in flight push a proxy down the ranking but never make it full', () => {
    const plan = planSelection(
      fleet({ a: { capacity: 2 }, b: { capacity: 2 } }),
      { selector: {}, target: null, exclusive: false, protocols: HTTP },
      view({ b: { active: 1 } }, [], [], { a: 2 }),
    );
    expect(plan.candidates.map((c) => c.name)).toEqual(['b', 'a']);
    expect(plan.atCapacity).toBe(0);
  });

  it('no match at all is an empty plan, not an error', () => {
    const plan = planSelection(
      fleet({ a: {} }),
      { selector: { x: 'y' }, target: null, exclusive: false, protocols: HTTP },
      view(),
    );
    expect(plan).toEqual({
      candidates: [],
      more: 0,
      full: [],
      considered: 0,
      otherProtocol: 0,
      cordoned: 0,
      inGateway: 0,
      unhealthy: 0,
      inCooldown: 0,
      cooldownEndsAtMs: null,
      atCapacity: 0,
    });
  });

  describe('limit: the best few of many, as the full ranking orders them', () => {
    // 300 proxies of assorted load, latency and health, some full: the order has ties to break by name.
    const many = Array.from({ length: 300 }, (_, i) =>
      proxy(`p${String(i).padStart(3, '0')}`, {
        capacity: 3,
        latencyMillis: i % 7 === 0 ? null : (i * 37) % 50,
        ...(i % 11 === 0 && { healthReason: 'ProbeSuspect' }),
      }),
    );
    const usage = Object.fromEntries(many.map((p, i) => [p.name, { active: (i * 13) % 4 }]));
    const request = { selector: {}, target: null, exclusive: false, protocols: HTTP };
    const all = planSelection(many, request, view(usage));

    it.each([1, 2, 64, 224, 225, 1000])('limit %i', (limit) => {
      const some = planSelection(many, { ...request, limit }, view(usage));
      expect(some.candidates).toEqual(all.candidates.slice(0, limit));
      expect(some.more).toBe(Math.max(0, all.candidates.length - limit));
      // Everything else is counted as without a limit.
      expect({ ...some, candidates: [], more: 0 }).toEqual({ ...all, candidates: [], more: 0 });
    });

    it('the whole ranking has as many candidates as proxies with room', () => {
      expect(all.more).toBe(0);
      expect(all.candidates.length + all.atCapacity).toBe(300);
      expect(all.candidates.length).toBeGreaterThan(64);
    });
  });

  describe('protocols', () => {
    const mixed = () =>
      fleet({
        managed: { attributes: { pool: 'p' } },
        extHttp: { attributes: { pool: 'p' }, external: true },
        socks: { attributes: { pool: 'p' }, external: true, protocol: 'socks5' },
        socksSick: { attributes: { pool: 'p' }, external: true, protocol: 'socks5', healthy: 'False' },
        other: { attributes: { pool: 'q' }, external: true, protocol: 'socks5' },
      });
    it.each<{
      protocols: ('http' | 'socks5')[];
      candidates: string[];
      considered: number;
      otherProtocol: number;
      unhealthy: number;
    }>([
      // The default: a SOCKS5 proxy is not `considered`, like an attribute mismatch.
      {
        protocols: ['http'],
        candidates: ['extHttp', 'managed'],
        considered: 2,
        otherProtocol: 2,
        unhealthy: 0,
      },
      { protocols: ['socks5'], candidates: ['socks'], considered: 2, otherProtocol: 2, unhealthy: 1 },
      {
        protocols: ['socks5', 'http'],
        candidates: ['extHttp', 'managed', 'socks'],
        considered: 4,
        otherProtocol: 0,
        unhealthy: 1,
      },
    ])('$protocols → $candidates', ({ protocols, candidates, considered, otherProtocol, unhealthy }) => {
      const plan = planSelection(
        mixed(),
        { selector: { pool: 'p' }, target: null, exclusive: false, protocols },
        view(),
      );
      expect(plan.candidates.map((c) => c.name)).toEqual(candidates);
      expect(plan).toMatchObject({
        considered,
        otherProtocol,
        unhealthy,
        inGateway: 0,
        inCooldown: 0,
        atCapacity: 0,
      });
      expect(plan.candidates.length + plan.unhealthy).toBe(plan.considered);
    });

    it('only SOCKS5 proxies match and http is asked for: an empty plan with nothing considered', () => {
      const plan = planSelection(
        fleet({ socks: { external: true, protocol: 'socks5' } }),
        { selector: {}, target: null, exclusive: false, protocols: HTTP },
        view(),
      );
      expect(plan).toMatchObject({
        candidates: [],
        considered: 0,
        otherProtocol: 1,
        unhealthy: 0,
        atCapacity: 0,
      });
    });
  });
});

describe('ranksBehind: a candidate ranked again on a count learned since (a commit lost to another replica)', () => {
  it('candidates carry what they were ranked by besides their count', () => {
    const plan = planSelection(
      fleet({
        slow: { latencyMillis: 900 },
        unknown: { latencyMillis: null },
        suspect: { healthReason: 'ProbeSuspect', latencyMillis: 1 },
      }),
      { selector: {}, target: null, exclusive: false, protocols: HTTP },
      view(),
    );
    expect(
      plan.candidates.map(({ name, suspect, latencyMillis }) => ({ name, suspect, latencyMillis })),
    ).toEqual([
      { name: 'slow', suspect: undefined, latencyMillis: 900 },
      { name: 'unknown', suspect: undefined, latencyMillis: undefined },
      { name: 'suspect', suspect: true, latencyMillis: 1 },
    ]);
  });

  const c = (name: string, latencyMillis?: number, suspect?: true) => ({
    name,
    uid: UID,
    capacity: 10,
    ...(latencyMillis !== undefined && { latencyMillis }),
    ...(suspect && { suspect }),
  });
  it.each([
    { why: 'more leases than the next', a: [c('p1', 10), 9], b: [c('p2', 20), 0], behind: true },
    { why: 'fewer leases', a: [c('p1', 10), 0], b: [c('p2', 20), 1], behind: false },
    { why: 'as many, and faster', a: [c('p1', 10), 1], b: [c('p2', 20), 1], behind: false },
    { why: 'as many, and slower', a: [c('p1', 30), 1], b: [c('p2', 20), 1], behind: true },
    { why: 'as many, latency unknown', a: [c('p1'), 1], b: [c('p2', 20), 1], behind: true },
    { why: 'as many, as fast: by name', a: [c('p2', 5), 1], b: [c('p1', 5), 1], behind: true },
    { why: 'AVAILABLE before a SUSPECT next', a: [c('p1', 10), 9], b: [c('p2', 1, true), 0], behind: false },
  ] as const)('$why: $behind', ({ a, b, behind }) => {
    expect(ranksBehind(a[0], a[1], b[0], b[1])).toBe(behind);
  });
});
