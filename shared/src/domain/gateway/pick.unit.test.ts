import { describe, expect, it } from 'vitest';
import type { GatewayRoute } from '../../messages/gateway-snapshot.js';
import { isUsable, pickUpstream, StickyTable } from './pick.js';
import { compileRouting, matchRoute, newLiveCounters, normalizeHost, type Upstream } from './routing.js';

const NOW = Date.UTC(2026, 0, 1);
const up = (name: string, extra: Partial<Upstream<null>> = {}): Upstream<null> => ({
  name,
  host: '10.0.0.1',
  port: 3128,
  capacity: 10,
  usableUntilMs: NOW + 60_000,
  expiresAtMs: NOW + 120_000,
  attributes: { region: 'eu' },
  live: newLiveCounters(),
  auth: null,
  ...extra,
});
const route = (name: string, hosts: string[], extra: Partial<GatewayRoute> = {}): GatewayRoute => ({
  name,
  match: { hosts },
  selector: {},
  policy: 'least-active',
  ...extra,
});

describe('matchRoute', () => {
  const table = compileRouting(
    [
      route('exact', ['api.example.com', '10.1.2.3', '::1']),
      route('wild', ['*.example.com']),
      route('deep', ['*.b.example.com', 'example.com']),
      route('rest', ['*']),
    ],
    [],
  );
  it.each([
    ['api.example.com', 'exact'],
    ['API.Example.COM.', 'exact'],
    ['x.example.com', 'wild'],
    ['a.b.example.com', 'wild'],
    ['example.com', 'deep'],
    ['10.1.2.3', 'exact'],
    ['[::1]', 'exact'],
    ['other.org', 'rest'],
  ])('%s → %s', (host, name) => {
    expect(matchRoute(table, normalizeHost(host))?.name).toBe(name);
  });

  // RFC 5952: one IPv6 address has many spellings. A route lists one; a request may name another.
  it.each([
    ['[2001:db8::1]', '[2001:0db8:0:0::1]'],
    ['[2001:db8::1]', '[2001:DB8::0:1]'],
    ['2001:0DB8:0000:0000:0000:0000:0000:0001', '[2001:db8::1]'],
    ['[::ffff:10.0.0.1]', '[::FFFF:a00:1]'],
    // An IPv4-mapped literal is the IPv4 address it maps, as the SSRF guard and lease targets take it.
    ['93.184.216.34', '[::ffff:93.184.216.34]'],
    ['93.184.216.34', '[::ffff:5db8:d822]'],
    ['::ffff:93.184.216.34', '93.184.216.34'],
  ])('a route for %s matches a request for %s (IPv6 literals compared canonically)', (routeHost, host) => {
    const t = compileRouting([route('v6', [routeHost]), route('other', ['other.example'])], []);
    expect(matchRoute(t, normalizeHost(host))?.name).toBe('v6');
  });

  it('normalises an IPv6 literal to its RFC 5952 text; a host name is left as it was', () => {
    expect(normalizeHost('[2001:0DB8:0:0:0:0:0:1]')).toBe('2001:db8::1');
    expect(normalizeHost('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(normalizeHost('Shop.Example.')).toBe('shop.example');
    // /v1/fetch reads its target with WHATWG URL, whose hostname is already this text.
    expect(normalizeHost(new URL('http://[2001:0DB8:0:0::1]:8080/').hostname)).toBe('2001:db8::1');
    // Not an address: kept as written (it matches no request: a request's literal is always canonical).
    expect(normalizeHost('1:2')).toBe('1:2');
    expect(normalizeHost('[::FFFF:5db8:d822]')).toBe('93.184.216.34');
    // Not mapped: IPv4-compatible and IPv4-translated addresses stay IPv6.
    expect(normalizeHost('[::ffff:0:5db8:d822]')).toBe('::ffff:0:5db8:d822');
  });

  it('matches nothing without a catch-all', () => {
    const t = compileRouting([route('only', ['*.example.com'])], []);
    expect(matchRoute(t, 'example.org')).toBeUndefined();
  });
});

describe('selectors', () => {
  it('keeps the candidates whose attributes match every selector key', () => {
    const proxies = [
      up('a'),
      up('b', { attributes: { region: 'us' } }),
      up('c', { attributes: { region: 'eu', tier: 'x' } }),
    ];
    const t = compileRouting(
      [route('eu', ['*'], { selector: { region: 'eu' } }), route('x', ['*'], { selector: { tier: 'x' } })],
      proxies,
    );
    expect(t.routes[0]!.candidates.map((c) => c.name)).toEqual(['a', 'c']);
    expect(t.routes[1]!.candidates.map((c) => c.name)).toEqual(['c']);
  });
});

describe('excludedRoutes (contract §6 TARGET tier)', () => {
  const routes = [
    route('r1', ['one.example']),
    route('r2', ['two.example'], { policy: 'round-robin' }),
    route('eu', ['*'], { selector: { region: 'eu' } }),
  ];
  it('leaves a proxy out of the routes it is excluded from only', () => {
    const t = compileRouting(routes, [
      up('a', { excludedRoutes: ['r1'] }),
      up('b'),
      up('c', { excludedRoutes: ['r2', 'eu'] }),
    ]);
    expect(t.routes.map((r) => [r.name, r.candidates.map((c) => c.name), [...r.byName.keys()]])).toEqual([
      ['r1', ['b', 'c'], ['b', 'c']],
      ['r2', ['a', 'b'], ['a', 'b']],
      ['eu', ['a', 'b'], ['a', 'b']],
    ]);
  });

  it('a proxy excluded from one route is still picked by another', () => {
    const t = compileRouting(routes, [up('a', { excludedRoutes: ['r1'] }), up('b')]);
    const r1 = matchRoute(t, 'one.example')!;
    const r2 = matchRoute(t, 'two.example')!;
    const sticky = new StickyTable(10);
    const onR1 = Array.from({ length: 6 }, () => pickUpstream(r1, NOW, undefined, sticky)?.name);
    const onR2 = Array.from({ length: 6 }, () => pickUpstream(r2, NOW, undefined, sticky)?.name);
    expect(new Set(onR1)).toEqual(new Set(['b']));
    expect(new Set(onR2)).toEqual(new Set(['a', 'b']));
  });

  it('excluded from every route that selects it: no route picks it (nothing usable → undefined)', () => {
    const t = compileRouting([route('r1', ['*'])], [up('a', { excludedRoutes: ['r1', 'gone'] })]);
    expect(pickUpstream(t.routes[0]!, NOW, undefined, new StickyTable(10))).toBeUndefined();
  });

  it('a sticky key pinned to a proxy moves once a new table excludes it from the route', () => {
    const r = [route('s', ['*'], { policy: 'sticky', stickyKey: { header: 'x-session' } })];
    const sticky = new StickyTable(10);
    const before = compileRouting(r, [up('a'), up('b')]).routes[0]!;
    const pinned = pickUpstream(before, NOW, 'k', sticky)!.name;
    const after = compileRouting(
      r,
      [up('a'), up('b')].map((u) => (u.name === pinned ? { ...u, excludedRoutes: ['s'] } : u)),
    ).routes[0]!;
    const moved = pickUpstream(after, NOW, 'k', sticky)!.name;
    expect(moved).not.toBe(pinned);
    expect(pickUpstream(after, NOW, 'k', sticky)?.name).toBe(moved);
  });
});

describe('isUsable', () => {
  it.each([
    ['fresh', up('a'), true],
    ['one ms before usableUntil', up('a', { usableUntilMs: NOW + 1 }), true],
    ['at usableUntil (still before expiresAt)', up('a', { usableUntilMs: NOW }), false],
    ['revoked', up('a', { live: newLiveCounters(0, 0, true) }), false],
    ['at capacity', up('a', { capacity: 2, live: newLiveCounters(1, 1) }), false],
  ])('%s', (_label, u, usable) => {
    expect(isUsable(u, NOW)).toBe(usable);
  });
});

describe('policies', () => {
  const table = (
    policy: GatewayRoute['policy'],
    proxies: Upstream<null>[],
    extra: Partial<GatewayRoute> = {},
  ) => compileRouting([route('r', ['*'], { policy, ...extra })], proxies).routes[0]!;
  const sticky = new StickyTable(100);

  it('least-active takes the least loaded usable proxy', () => {
    const r = table('least-active', [
      up('busy', { live: newLiveCounters(3) }),
      up('idle-expired', { usableUntilMs: NOW - 1 }),
      up('light', { live: newLiveCounters(1) }),
    ]);
    expect(pickUpstream(r, NOW, undefined, sticky)?.name).toBe('light');
  });

  it('least-active spreads ties', () => {
    const r = table('least-active', [up('a'), up('b'), up('c')]);
    const names = [0, 1, 2].map(() => pickUpstream(r, NOW, undefined, sticky)?.name);
    expect(new Set(names).size).toBe(3);
  });

  it.each([
    ['busy (one long tunnel each)', () => newLiveCounters(1)],
    ['revoked', () => newLiveCounters(0, 0, true)],
  ])('least-active shares the load evenly among idle proxies behind a run of %s ones', (_l, held) => {
    const r = table('least-active', [up('a', { live: held() }), up('b', { live: held() }), up('c'), up('d')]);
    const picks = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      const name = pickUpstream(r, NOW, undefined, sticky)!.name; // a short request: done before the next
      picks.set(name, (picks.get(name) ?? 0) + 1);
    }
    expect(Object.fromEntries(picks)).toEqual({ c: 200, d: 200 });
  });

  it('round-robin cycles and skips unusable proxies', () => {
    const r = table('round-robin', [up('a'), up('b', { usableUntilMs: NOW }), up('c')]);
    const names = [0, 1, 2, 3].map(() => pickUpstream(r, NOW, undefined, sticky)?.name);
    expect(names).toEqual(['a', 'c', 'a', 'c']);
  });

  it('returns nothing when no candidate is usable', () => {
    const r = table('round-robin', [
      up('a', { usableUntilMs: NOW }),
      up('b', { live: newLiveCounters(0, 0, true) }),
    ]);
    expect(pickUpstream(r, NOW, undefined, sticky)).toBeUndefined();
    expect(pickUpstream(table('least-active', []), NOW, undefined, sticky)).toBeUndefined();
  });

  it('sticky keeps a key on its proxy, and moves it when that proxy becomes unusable', () => {
    const proxies = [up('a'), up('b'), up('c')];
    const r = table('sticky', proxies, { stickyKey: { header: 'x-session' } });
    const t = new StickyTable(100);
    const first = pickUpstream(r, NOW, 's1', t)!;
    for (let i = 0; i < 5; i++) {
      first.live.active++;
      expect(pickUpstream(r, NOW, 's1', t)?.name).toBe(first.name);
    }
    first.live.revoked = true;
    const moved = pickUpstream(r, NOW, 's1', t)!;
    expect(moved.name).not.toBe(first.name);
    expect(pickUpstream(r, NOW, 's1', t)?.name).toBe(moved.name);
  });

  it('one client user flooding the sticky table recycles its own keys, never another user’s', () => {
    const proxies = [up('a'), up('b'), up('c')];
    const r = table('sticky', proxies, { stickyKey: { header: 'x-session' } });
    const t = new StickyTable(10);
    const alice = ['s1', 's2', 's3'].map((k) => pickUpstream(r, NOW, k, t, undefined, 'alice')!.name);
    // mallory sends a new session value on every request, far more than the table holds.
    for (let i = 0; i < 100; i++) pickUpstream(r, NOW, `m${i}`, t, undefined, 'mallory');
    expect(t.size).toBe(10);
    // alice's three keys are still there: each lands where it did, whatever is least active now.
    proxies.forEach((p, i) => {
      p.live.active = 5 - i;
    });
    expect(['s1', 's2', 's3'].map((k) => t.get(`${r.name}\n${k}`, 'alice'))).toEqual(alice);
    // mallory kept the rest of the room, her most recent keys.
    expect(t.get(`${r.name}\nm99`, 'mallory')).toBeDefined();
    expect(t.get(`${r.name}\nm0`, 'mallory')).toBeUndefined();
  });

  it('full, the table takes the room from the owner holding the most keys, its least recently used first', () => {
    const t = new StickyTable(4);
    t.set('a1', 'p', 'alice');
    t.set('a2', 'p', 'alice');
    t.set('a3', 'p', 'alice');
    t.set('b1', 'p', 'bob');
    expect(t.get('a1', 'alice')).toBe('p'); // a2 is now alice's least recently used
    t.set('b2', 'p', 'bob');
    expect([t.get('a1', 'alice'), t.get('a2', 'alice'), t.get('a3', 'alice')]).toEqual(['p', undefined, 'p']);
    // Two each: bob's next key evicts from whichever is largest — then bob (three) loses his oldest.
    t.set('b3', 'p', 'bob');
    expect(t.size).toBe(4);
    expect([t.get('b1', 'bob'), t.get('b2', 'bob'), t.get('b3', 'bob')]).toEqual([undefined, 'p', 'p']);
    // A key is its owner's: another user asking for it finds nothing.
    expect(t.get('b2', 'alice')).toBeUndefined();
  });

  it.each(['least-active', 'round-robin', 'sticky'] as const)(
    '%s never picks the proxy a request just failed to dial (avoid), and says so when it was the only one',
    (policy) => {
      const r = table(policy, [up('a'), up('b')], { stickyKey: { header: 'x-session' } });
      const t = new StickyTable(10);
      const a = r.sound.find((u) => u.name === 'a')!;
      // Least-active would take `a` (fewest in flight), round-robin's turn and the key's pin may be on it.
      r.sound.find((u) => u.name === 'b')!.live.active = 3;
      if (policy === 'sticky') t.set(`${r.name}\nk`, 'a');
      for (let i = 0; i < 4; i++) expect(pickUpstream(r, NOW, 'k', t, a)?.name).toBe('b');
      const alone = table(policy, [up('a')], { stickyKey: { header: 'x-session' } });
      expect(pickUpstream(alone, NOW, 'k', t, alone.sound[0])).toBeUndefined();
    },
  );

  it.each(['least-active', 'round-robin', 'sticky'] as const)(
    '%s avoids the failed proxy by name: its entry from before a snapshot swap keeps the new one out too',
    (policy) => {
      const before = table(policy, [up('a'), up('b')], { stickyKey: { header: 'x-session' } });
      const r = table(policy, [up('a'), up('b')], { stickyKey: { header: 'x-session' } }); // the swap
      const t = new StickyTable(10);
      const old = before.sound.find((u) => u.name === 'a')!;
      r.sound.find((u) => u.name === 'b')!.live.active = 3;
      if (policy === 'sticky') t.set(`${r.name}\nk`, 'a');
      for (let i = 0; i < 4; i++) expect(pickUpstream(r, NOW, 'k', t, old)?.name).toBe('b');
    },
  );

  it('a sticky key pinned to a proxy it failed to dial moves with the redial, as off an unusable proxy', () => {
    const r = table('sticky', [up('a'), up('b')], { stickyKey: { header: 'x-session' } });
    const t = new StickyTable(10);
    const first = pickUpstream(r, NOW, 'k', t)!;
    const moved = pickUpstream(r, NOW, 'k', t, first)!;
    expect(moved.name).not.toBe(first.name);
    expect(pickUpstream(r, NOW, 'k', t)?.name).toBe(moved.name);
  });

  it('sticky without a key on the request falls back to least-active', () => {
    const r = table('sticky', [up('a', { live: newLiveCounters(5) }), up('b')], {
      stickyKey: { clientCredentials: true },
    });
    expect(pickUpstream(r, NOW, undefined, new StickyTable(10))?.name).toBe('b');
  });
});

describe('SUSPECT proxies (docs/health.md): picked only when no sound candidate is usable', () => {
  const table = (
    policy: GatewayRoute['policy'],
    proxies: Upstream<null>[],
    extra: Partial<GatewayRoute> = {},
  ) => compileRouting([route('r', ['*'], { policy, ...extra })], proxies).routes[0]!;
  const busy = (active: number) => ({ live: newLiveCounters(active) });
  const stickyRoute = { stickyKey: { header: 'x-session' } } as const;
  const picks = (r: ReturnType<typeof table>, n: number, key?: (i: number) => string) =>
    Array.from({ length: n }, (_, i) => pickUpstream(r, NOW, key?.(i), new StickyTable(100))?.name);

  it('splits the candidates once, at compile time, keeping their order', () => {
    const r = table('least-active', [
      up('a'),
      up('s1', { suspect: true }),
      up('b'),
      up('s2', { suspect: true }),
    ]);
    expect(r.candidates.map((c) => c.name)).toEqual(['a', 's1', 'b', 's2']);
    expect(r.sound.map((c) => c.name)).toEqual(['a', 'b']);
    expect(r.suspect.map((c) => c.name)).toEqual(['s1', 's2']);
    // No suspect proxy: the sound list is the candidates array itself (nothing copied).
    const plain = table('least-active', [up('a'), up('b')]);
    expect(plain.sound).toBe(plain.candidates);
    expect(plain.suspect).toEqual([]);
  });

  it.each<GatewayRoute['policy']>(['least-active', 'round-robin', 'sticky'])(
    '%s: an idle suspect proxy loses to a busier sound one',
    (policy) => {
      const r = table(
        policy,
        [up('s', { suspect: true }), up('a', busy(3)), up('b', busy(5))],
        policy === 'sticky' ? stickyRoute : {},
      );
      const names = picks(r, 8, (i) => `k${i}`);
      expect(names.every((n) => n === 'a' || n === 'b')).toBe(true);
      if (policy === 'least-active') expect(new Set(names)).toEqual(new Set(['a']));
    },
  );

  it.each<GatewayRoute['policy']>(['least-active', 'round-robin', 'sticky'])(
    '%s: fails open — every candidate suspect, they are picked (never no_upstream for it), in turn',
    (policy) => {
      const r = table(
        policy,
        [up('s1', { suspect: true }), up('s2', { suspect: true })],
        policy === 'sticky' ? stickyRoute : {},
      );
      expect(new Set(picks(r, 6, (i) => `k${i}`))).toEqual(new Set(['s1', 's2']));
    },
  );

  it.each<[string, Partial<Upstream<null>>]>([
    ['at capacity', { capacity: 2, live: newLiveCounters(2) }],
    ['revoked', { live: newLiveCounters(0, 0, true) }],
    ['past usableUntil', { usableUntilMs: NOW }],
  ])('fails open when every sound candidate is %s', (_n, unusable) => {
    for (const policy of ['least-active', 'round-robin'] as const) {
      const r = table(policy, [up('a', unusable), up('s', { suspect: true })]);
      expect(picks(r, 3)).toEqual(['s', 's', 's']);
    }
  });

  it('round-robin among the sound ones is not disturbed by suspect candidates', () => {
    const r = table('round-robin', [up('a'), up('s', { suspect: true }), up('b'), up('c')]);
    expect(picks(r, 6)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  it('nothing usable at all is still nothing', () => {
    const r = table('least-active', [
      up('a', { usableUntilMs: NOW }),
      up('s', { suspect: true, usableUntilMs: NOW }),
    ]);
    expect(picks(r, 1)).toEqual([undefined]);
  });

  it('sticky: a key pinned to a proxy that turns SUSPECT stays on it while usable; a new key prefers a sound one', () => {
    const r = [route('s', ['*'], { policy: 'sticky', ...stickyRoute })];
    const t = new StickyTable(100);
    const proxies = [up('a'), up('b')];
    const before = compileRouting(r, proxies).routes[0]!;
    const pinned = pickUpstream(before, NOW, 'k', t)!.name;
    // The next snapshot marks it suspect (same live counters: they outlive swaps).
    const after = compileRouting(
      r,
      proxies.map((u) => (u.name === pinned ? { ...u, suspect: true } : u)),
    ).routes[0]!;
    expect(pickUpstream(after, NOW, 'k', t)?.name).toBe(pinned);
    const other = proxies.find((u) => u.name !== pinned)!.name;
    for (let i = 0; i < 4; i++) expect(pickUpstream(after, NOW, `new-${i}`, t)?.name).toBe(other);
    // Once the suspect one is unusable the key moves, as for any proxy.
    proxies.find((u) => u.name === pinned)!.live.revoked = true;
    expect(pickUpstream(after, NOW, 'k', t)?.name).toBe(other);
  });

  it('sticky: a new key goes to a suspect proxy only when no sound one is usable, and stays there', () => {
    const proxies = [up('a', { capacity: 1, ...busy(1) }), up('s', { suspect: true })];
    const r = table('sticky', proxies, stickyRoute);
    const t = new StickyTable(100);
    expect(pickUpstream(r, NOW, 'k', t)?.name).toBe('s');
    proxies[0]!.live.active = 0;
    expect(pickUpstream(r, NOW, 'k', t)?.name).toBe('s');
    expect(pickUpstream(r, NOW, 'k2', t)?.name).toBe('a');
  });
});

describe('StickyTable', () => {
  it('is bounded and evicts the least recently used key', () => {
    const t = new StickyTable(2);
    t.set('k1', 'a');
    t.set('k2', 'b');
    t.get('k1');
    t.set('k3', 'c');
    expect(t.size).toBe(2);
    expect(t.get('k2')).toBeUndefined();
    expect(t.get('k1')).toBe('a');
    expect(t.get('k3')).toBe('c');
  });
});
