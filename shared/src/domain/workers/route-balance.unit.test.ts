import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../testing/seeded-random.js';
import { rendezvousOwner } from './rendezvous.js';
import { type BalanceProxy, type BalanceRoute, balancedOwners } from './route-balance.js';

const W3 = ['gw-a', 'gw-b', 'gw-c'];
const proxy = (
  name: string,
  attributes: Record<string, string> = {},
  eligible = W3,
  serving = true,
): BalanceProxy => ({ name, attributes, eligible, serving });
const shop: BalanceRoute = { selector: { site: 'shop' } };
const everything: BalanceRoute = { selector: {} };

/** Per worker, how many of the proxies `selector` picks it owns (0 for a worker that owns none). */
function perWorker(
  owners: Map<string, string | null>,
  proxies: readonly BalanceProxy[],
  selector: Record<string, string>,
  workers = W3,
) {
  const c = new Map(workers.map((w) => [w, 0]));
  for (const p of proxies) {
    if (!Object.entries(selector).every(([k, v]) => p.attributes[k] === v)) continue;
    const o = owners.get(p.name);
    if (o) c.set(o, (c.get(o) ?? 0) + 1);
  }
  return c;
}

/** Names n0, n1, … whose plain rendezvous owners over W3 are all `worker` (found by search, deterministic). */
function namesRendezvousGives(worker: string, count: number, prefix: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    if (rendezvousOwner(`${prefix}${i}`, W3) === worker) out.push(`${prefix}${i}`);
  }
  return out;
}

describe('balancedOwners', () => {
  it('is plain rendezvous when rendezvous already gives every worker its share of every route', () => {
    const proxies = Array.from({ length: 60 }, (_, i) => proxy(`p${i}`));
    const owners = balancedOwners(proxies, []);
    for (const p of proxies) expect(owners.get(p.name)).toBe(rendezvousOwner(p.name, W3));
    // The default route over the same pool: rendezvous gives each of the three at least ⌊60/3⌋ = 20? If
    // not, only the shortfall moves; every other proxy keeps its rendezvous owner.
    const routed = balancedOwners(proxies, [everything]);
    const moved = proxies.filter((p) => routed.get(p.name) !== rendezvousOwner(p.name, W3));
    const before = perWorker(owners, proxies, {});
    const shortfall = W3.reduce((s, w) => s + Math.max(0, 20 - before.get(w)!), 0);
    expect(moved.length).toBe(shortfall);
    for (const [, n] of perWorker(routed, proxies, {})) expect(n).toBeGreaterThanOrEqual(20);
  });

  it('gives every worker one of a route whose three proxies rendezvous puts on one worker', () => {
    const names = namesRendezvousGives('gw-a', 3, 'shop-');
    const others = Array.from({ length: 30 }, (_, i) => proxy(`other-${i}`));
    const proxies = [...names.map((n) => proxy(n, { site: 'shop' })), ...others];
    const before = perWorker(balancedOwners(proxies, []), proxies, { site: 'shop' });
    expect(before).toEqual(
      new Map([
        ['gw-a', 3],
        ['gw-b', 0],
        ['gw-c', 0],
      ]),
    );
    const owners = balancedOwners(proxies, [shop, everything]);
    expect(perWorker(owners, proxies, { site: 'shop' })).toEqual(
      new Map([
        ['gw-a', 1],
        ['gw-b', 1],
        ['gw-c', 1],
      ]),
    );
  });

  it('swaps when no single move can: a narrow route on a worker at its share of the default route', () => {
    // Nine proxies, three each by rendezvous, and gw-a's three are the whole "shop" route. No single move
    // helps: gw-a would fall short of the default route's three. gw-b and gw-c each take a shop proxy and
    // hand gw-a one of theirs in exchange, so every worker keeps its three.
    const names = namesRendezvousGives('gw-a', 3, 'shop-');
    const others = [...namesRendezvousGives('gw-b', 3, 'b-'), ...namesRendezvousGives('gw-c', 3, 'c-')];
    const proxies = [...names.map((n) => proxy(n, { site: 'shop' })), ...others.map((n) => proxy(n))];
    const owners = balancedOwners(proxies, [shop, everything]);
    expect(perWorker(owners, proxies, { site: 'shop' })).toEqual(
      new Map([
        ['gw-a', 1],
        ['gw-b', 1],
        ['gw-c', 1],
      ]),
    );
    expect([...perWorker(owners, proxies, {}).values()]).toEqual([3, 3, 3]);
  });

  it('gives each worker ⌊K/N⌋ of a route, never taking a giver below its own share', () => {
    const names = namesRendezvousGives('gw-b', 10, 'shop-');
    const proxies = names.map((n) => proxy(n, { site: 'shop' }));
    const counts = perWorker(balancedOwners(proxies, [shop]), proxies, { site: 'shop' });
    expect([...counts.values()].sort()).toEqual([3, 3, 4]);
  });

  it('spreads a route of fewer proxies than workers over as many workers as it has proxies', () => {
    const names = namesRendezvousGives('gw-c', 2, 'shop-');
    const proxies = names.map((n) => proxy(n, { site: 'shop' }));
    const owners = balancedOwners(proxies, [shop]);
    expect(new Set(names.map((n) => owners.get(n))).size).toBe(2);
  });

  it('never takes the only proxy of another route from its owner', () => {
    // gw-a owns both shop proxies, and one of them is also gw-a's only "news" proxy: the other must move.
    const [s1, s2] = namesRendezvousGives('gw-a', 2, 'shop-') as [string, string];
    const news = namesRendezvousGives('gw-b', 1, 'news-');
    const proxies = [
      proxy(s1, { site: 'shop', news: 'yes' }),
      proxy(s2, { site: 'shop' }),
      ...news.map((n) => proxy(n, { news: 'yes' })),
    ];
    const owners = balancedOwners(proxies, [{ selector: { news: 'yes' } }, shop]);
    expect(owners.get(s1)).toBe('gw-a');
    expect(owners.get(s2)).not.toBe('gw-a');
  });

  it('only hands a proxy to a worker that may own it, and counts only those workers in the share', () => {
    // SOCKS5 proxies only for gw-a and gw-b (gw-c's protocol cannot read them): two proxies, two workers.
    const names = namesRendezvousGives('gw-a', 2, 'socks-');
    const proxies = names.map((n) => proxy(n, { site: 'shop' }, ['gw-a', 'gw-b']));
    const owners = balancedOwners(proxies, [shop]);
    expect(names.map((n) => owners.get(n)).sort()).toEqual(['gw-a', 'gw-b']);
    expect(balancedOwners([proxy('lonely', {}, [])], [everything]).get('lonely')).toBeNull();
  });

  it('counts only proxies that can carry traffic: one that cannot is owned by rendezvous and covers nothing', () => {
    const [s1, s2] = namesRendezvousGives('gw-a', 2, 'shop-') as [string, string];
    const [down] = namesRendezvousGives('gw-b', 1, 'down-') as [string];
    const proxies = [
      proxy(s1, { site: 'shop' }),
      proxy(s2, { site: 'shop' }),
      proxy(down, { site: 'shop' }, W3, false),
    ];
    const owners = balancedOwners(proxies, [shop]);
    expect(owners.get(down)).toBe('gw-b');
    // gw-b's unhealthy proxy gives it no way to the route: it is handed a serving one all the same.
    expect(perWorker(owners, proxies.slice(0, 2), { site: 'shop' })).toEqual(
      new Map([
        ['gw-a', 1],
        ['gw-b', 1],
        ['gw-c', 0],
      ]),
    );
  });

  it('counts a proxy excluded from a route (its target check fails through it) in none of it', () => {
    // gw-a owns two shop proxies; gw-b's one is excluded from "shop"; gw-c's reaches it.
    const owned = (name: string, current: string, excludedFrom?: string[]): BalanceProxy => ({
      ...proxy(name, { site: 'shop' }),
      current,
      excludedFrom,
    });
    const proxies = [
      owned('a1', 'gw-a'),
      owned('a2', 'gw-a'),
      owned('b1', 'gw-b', ['shop']),
      owned('c1', 'gw-c'),
    ];
    const named = { name: 'shop', selector: { site: 'shop' } };
    const owners = balancedOwners(proxies, [named]);
    // gw-b would answer shop.example no_upstream with b1 alone: it takes one of gw-a's two.
    expect(['a1', 'a2'].map((n) => owners.get(n)).sort()).toEqual(['gw-a', 'gw-b']);
    expect(owners.get('b1')).toBe('gw-b');
    // An exclusion from another route changes nothing here; excluded through every proxy, none counts as
    // excluded (the control plane fails such a route open) and nothing moves.
    expect(balancedOwners(proxies, [{ ...named, name: 'news' }]).get('a2')).toBe('gw-a');
    const allOut = proxies.map((p) => ({ ...p, excludedFrom: ['shop'] }));
    const open = balancedOwners(allOut, [named]);
    expect(allOut.map((p) => open.get(p.name))).toEqual(['gw-a', 'gw-a', 'gw-b', 'gw-c']);
  });

  it('answers the same whatever order its inputs come in', () => {
    const rnd = mulberry32(7);
    const sites = ['a', 'b', 'c', 'd'];
    const proxies = Array.from({ length: 80 }, (_, i) =>
      proxy(`p${i}`, { site: sites[Math.floor(rnd() * sites.length)]!, tier: rnd() < 0.5 ? 'x' : 'y' }),
    );
    const routes = [
      ...sites.map((s) => ({ selector: { site: s } })),
      { selector: { tier: 'x' } },
      everything,
    ];
    const one = balancedOwners(proxies, routes);
    const two = balancedOwners(
      [...proxies].reverse().map((p) => ({ ...p, eligible: [...p.eligible].reverse() })),
      routes,
    );
    expect(two).toEqual(one);
  });

  it('starts from the current owners: a proxy that goes down and comes back moves next to nothing', () => {
    // Twenty routes of three and the default route over all sixty (K = 60 = 3 × 20): one proxy down takes
    // the default route's floor from 20 to 19, and back when it returns. Started from rendezvous on every
    // pass, that change of floor re-decided the whole repair: healthy proxies drained from one worker to
    // another on every health blip, a quarter of this pool per outage.
    const proxies = Array.from({ length: 60 }, (_, i) => proxy(`f${i}`, { site: `s${i % 20}` }));
    const routes = [...Array.from({ length: 20 }, (_, i) => ({ selector: { site: `s${i}` } })), everything];
    const pass = (owners: Map<string, string | null>, down = -1) =>
      balancedOwners(
        proxies.map((p, i) => ({ ...p, serving: i !== down, current: owners.get(p.name) ?? null })),
        routes,
      );
    const moves = (a: Map<string, string | null>, b: Map<string, string | null>) =>
      proxies.filter((p) => a.get(p.name) !== b.get(p.name)).length;
    let owners = balancedOwners(proxies, routes);
    // A steady state re-plans to itself.
    expect(moves(pass(owners), owners)).toBe(0);
    let moved = 0;
    for (let k = 0; k < proxies.length; k++) {
      const down = pass(owners, k);
      // The proxy that went down stays where it is (it counts in no route while down).
      expect(down.get(proxies[k]!.name)).toBe(owners.get(proxies[k]!.name));
      const up = pass(down);
      moved += moves(owners, down) + moves(down, up);
      owners = up;
    }
    // Fewer moves than outages (started from rendezvous on every pass: 944 for these 60).
    expect(moved).toBeLessThan(proxies.length);
  });

  it('keeps a current owner only while it may own the proxy', () => {
    const [name] = namesRendezvousGives('gw-a', 1, 'kept-') as [string];
    // gw-c is not among those that may own it (gone, shutting down, or cannot read its protocol).
    const owners = balancedOwners([{ ...proxy(name, {}, ['gw-a', 'gw-b']), current: 'gw-c' }], [everything]);
    expect(owners.get(name)).toBe('gw-a');
    const kept = balancedOwners([{ ...proxy(name), current: 'gw-b' }], [everything]);
    expect(kept.get(name)).toBe('gw-b');
  });

  it('leaves less shortfall than rendezvous on random fleets, and none on a route over disjoint sites', () => {
    const rnd = mulberry32(42);
    for (let trial = 0; trial < 40; trial++) {
      const workers = Array.from({ length: 2 + Math.floor(rnd() * 5) }, (_, i) => `w${i}`);
      const sites = Array.from({ length: 1 + Math.floor(rnd() * 6) }, (_, i) => `s${i}`);
      const proxies = Array.from({ length: 5 + Math.floor(rnd() * 60) }, (_, i) =>
        proxy(
          `t${trial}-p${i}`,
          { site: sites[Math.floor(rnd() * sites.length)]!, tier: rnd() < 0.3 ? 'gold' : 'std' },
          workers,
        ),
      );
      const siteRoutes = sites.map((s) => ({ selector: { site: s } }));
      const routes = [...siteRoutes, { selector: { tier: 'gold' } }, everything];
      const plain = balancedOwners(proxies, []);
      const owners = balancedOwners(proxies, routes);
      const shortfall = (o: Map<string, string | null>) =>
        routes.reduce((sum, r) => {
          const c = perWorker(o, proxies, r.selector ?? {}, workers);
          const k = [...c.values()].reduce((a, b) => a + b, 0);
          const floor = k === 0 ? 0 : Math.max(1, Math.floor(k / workers.length));
          return sum + [...c.values()].reduce((s, n) => s + Math.max(0, floor - n), 0);
        }, 0);
      expect(shortfall(owners)).toBeLessThanOrEqual(shortfall(plain));
      for (const p of proxies) expect(workers).toContain(owners.get(p.name));
      // No move and no swap takes a worker below its share of a route where rendezvous left it at or above.
      for (const r of routes) {
        const before = perWorker(plain, proxies, r.selector ?? {}, workers);
        const after = perWorker(owners, proxies, r.selector ?? {}, workers);
        const k = [...before.values()].reduce((a, b) => a + b, 0);
        const floor = k === 0 ? 0 : Math.max(1, Math.floor(k / workers.length));
        for (const w of workers) expect(after.get(w)).toBeGreaterThanOrEqual(Math.min(floor, before.get(w)!));
      }
      // Sites alone (disjoint routes): every worker reaches its floor of every site that has enough.
      const bySite = balancedOwners(proxies, siteRoutes);
      for (const s of sites) {
        const c = perWorker(bySite, proxies, { site: s }, workers);
        const k = [...c.values()].reduce((a, b) => a + b, 0);
        const floor = k === 0 ? 0 : Math.max(1, Math.floor(k / workers.length));
        const short = [...c.values()].filter((n) => n < floor).length;
        // With fewer proxies than workers every proxy is on its own worker; otherwise no one is short.
        if (k >= workers.length) expect(short).toBe(0);
        else expect([...c.values()].filter((n) => n === 1).length).toBe(k);
      }
    }
  });
});

describe('balancedOwners: no worker past the cap (what one snapshot may carry)', () => {
  const W2 = ['w1', 'w2'];
  const on = (name: string, site: string, current: string, serving = true): BalanceProxy => ({
    ...proxy(name, { site }, W2, serving),
    current,
  });
  const shopRoute: BalanceRoute = { name: 'shop', selector: { site: 'shop' } };
  const newsRoute: BalanceRoute = { name: 'news', selector: { site: 'news' } };
  const shares = (owners: Map<string, string | null>) => {
    const n = new Map(W2.map((w) => [w, 0]));
    for (const o of owners.values()) if (o) n.set(o, n.get(o)! + 1);
    return n;
  };
  // w1 at the cap of 10 with proxies in no route, w2 with the only two shop proxies (and two news ones).
  const fleet = [
    ...Array.from({ length: 10 }, (_, i) => on(`x${i}`, 'x', 'w1')),
    on('s0', 'shop', 'w2'),
    on('s1', 'shop', 'w2'),
    on('n0', 'news', 'w2'),
    on('n1', 'news', 'w2'),
  ];

  it('a worker at the cap gains the routes it lacks by swaps, handing back proxies in no route', () => {
    const owners = balancedOwners(fleet, [shopRoute, newsRoute], 10);
    for (const site of ['shop', 'news'])
      expect(perWorker(owners, fleet, { site }, W2)).toEqual(
        new Map([
          ['w1', 1],
          ['w2', 1],
        ]),
      );
    expect(shares(owners)).toEqual(
      new Map([
        ['w1', 10],
        ['w2', 4],
      ]),
    );
    // Four proxies change hands: a shop and a news one w1 takes, and the two it hands back (smallest names).
    const moved = fleet.filter((p) => owners.get(p.name) !== p.current).map((p) => p.name);
    expect(moved).toHaveLength(4);
    expect(moved.filter((n) => n.startsWith('x'))).toEqual(['x0', 'x1']);
    // From that answer, nothing moves again.
    const again = fleet.map((p) => ({ ...p, current: owners.get(p.name)! }));
    const next = balancedOwners(again, [shopRoute, newsRoute], 10);
    for (const p of again) expect(next.get(p.name)).toBe(p.current);
  });

  it('a full worker hands back a proxy in no route before one a route counts', () => {
    const proxies = [
      ...Array.from({ length: 5 }, (_, i) => on(`a-news${i}`, 'news', 'w1')),
      ...Array.from({ length: 5 }, (_, i) => on(`z-down${i}`, 'news', 'w1', false)),
      on('s0', 'shop', 'w2'),
      on('s1', 'shop', 'w2'),
      on('n0', 'news', 'w2'),
      on('n1', 'news', 'w2'),
    ];
    const owners = balancedOwners(proxies, [shopRoute, newsRoute], 10);
    expect(perWorker(owners, proxies, { site: 'shop' }, W2).get('w1')).toBe(1);
    // Handed back for the shop one: z-down0, not a-news0, the smallest name. (w2, short of news, also takes
    // a-news1 by a plain move: it has room.)
    const handed = proxies
      .filter((p) => p.current === 'w1' && owners.get(p.name) === 'w2')
      .map((p) => p.name);
    expect(handed).toEqual(['a-news1', 'z-down0']);
  });

  it('below the cap the same shortfall is made up by plain moves, as before', () => {
    const owners = balancedOwners(fleet, [shopRoute, newsRoute]);
    expect(perWorker(owners, fleet, { site: 'shop' }, W2).get('w1')).toBe(1);
    expect(perWorker(owners, fleet, { site: 'news' }, W2).get('w1')).toBe(1);
    expect(shares(owners).get('w1')).toBe(12);
  });

  it('a full worker lacking a catch-all route swaps in serving proxies for ones that serve nothing', () => {
    const proxies = [
      ...Array.from({ length: 10 }, (_, i) => on(`u${i}`, 'x', 'w1', false)),
      ...Array.from({ length: 4 }, (_, i) => on(`h${i}`, 'x', 'w2')),
    ];
    const owners = balancedOwners(proxies, [everything], 10);
    expect(
      perWorker(
        owners,
        proxies.filter((p) => p.serving),
        {},
        W2,
      ),
    ).toEqual(
      new Map([
        ['w1', 2],
        ['w2', 2],
      ]),
    );
    expect(shares(owners).get('w1')).toBe(10);
  });

  it('a proxy without an owner goes to the worker with room, even where rendezvous prefers a full one', () => {
    const fresh = Array.from({ length: 40 }, (_, i) => `f${i}`)
      .filter((n) => rendezvousOwner(n, W2) === 'w1')
      .slice(0, 5)
      .map((n): BalanceProxy => ({ ...proxy(n, {}, W2), current: null }));
    const proxies = [...fleet, ...fresh];
    const owners = balancedOwners(proxies, [shopRoute, newsRoute], 10);
    for (const p of fresh) expect(owners.get(p.name)).toBe('w2');
    expect(shares(owners).get('w1')).toBe(10);
    // With no room anywhere it is plain rendezvous (the share cap after the balance leaves it unassigned).
    const crowded = balancedOwners(proxies, [], 4);
    for (const p of fresh) expect(crowded.get(p.name)).toBe('w1');
  });
});
