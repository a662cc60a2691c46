// Churn of the planner's ownership as the fleet changes (docs/gateway-control-plane.md § Ownership): how
// many proxies change owner — each one a drain on its old worker and a snapshot change on two — when one
// worker joins or leaves, and whether a settled answer stays put from pass to pass. Rendezvous alone moves
// about 1/n of the pool on a join; the route repair (route-balance.ts), started from the current owners,
// must not add a reshuffle of its own on top.
import { describe, expect, it } from 'vitest';
import { type BalanceProxy, type BalanceRoute, balancedOwners } from './route-balance.js';

const POOL = 1_000;
const COUNTRIES = 10;
const routes: BalanceRoute[] = [
  ...Array.from({ length: COUNTRIES }, (_, c) => ({ name: `c${c}`, selector: { country: `c${c}` } })),
  { name: 'site-x', selector: { site: 'x' } },
  { name: 'default', selector: {} },
];
const workers = (n: number) => Array.from({ length: n }, (_, i) => `gw-${i}`);

function pool(eligible: readonly string[], current?: Map<string, string | null>): BalanceProxy[] {
  return Array.from({ length: POOL }, (_, i) => ({
    name: `px-${i}`,
    attributes: { country: `c${i % COUNTRIES}`, ...(i % 97 === 0 ? { site: 'x' } : {}) },
    serving: true,
    eligible,
    current: current?.get(`px-${i}`) ?? null,
  }));
}

/** The owners a fleet of these workers settles on, from a pool nobody owns yet. */
function settled(ws: readonly string[]): Map<string, string | null> {
  const first = balancedOwners(pool(ws), routes);
  return balancedOwners(pool(ws, first), routes);
}

const moved = (a: Map<string, string | null>, b: Map<string, string | null>) =>
  [...a].filter(([p, o]) => b.get(p) !== o).length;

function perRoute(owners: Map<string, string | null>, ws: readonly string[], country: string) {
  const c = new Map(ws.map((w) => [w, 0]));
  pool(ws).forEach((p) => {
    if (p.attributes.country === country) c.set(owners.get(p.name)!, c.get(owners.get(p.name)!)! + 1);
  });
  return [...c.values()];
}

describe('ownership churn as the fleet changes', () => {
  it('a settled answer is a fixed point: the next pass moves nothing', () => {
    for (const n of [1, 3, 4, 7]) {
      const ws = workers(n);
      const owners = settled(ws);
      expect(moved(owners, balancedOwners(pool(ws, owners), routes))).toBe(0);
    }
  });

  it('a fifth worker joining takes its share — about a fifth of the pool — and nothing else moves', () => {
    const four = settled(workers(4));
    const five = balancedOwners(pool(workers(5), four), routes);
    const taken = [...five].filter(([, o]) => o === 'gw-4').length;
    // Every move is a proxy the newcomer takes: none shuffled between the old four.
    expect(moved(four, five)).toBe(taken);
    expect(taken).toBeGreaterThanOrEqual(POOL / 5 - COUNTRIES);
    expect(taken).toBeLessThanOrEqual(POOL / 5 + COUNTRIES);
    // It has its share of every country route (⌊100/5⌋ = 20), so it can answer every route.
    for (let c = 0; c < COUNTRIES; c++)
      expect(Math.min(...perRoute(five, workers(5), `c${c}`))).toBeGreaterThanOrEqual(20);
  });

  // Its proxies are placed by plain rendezvous, which can leave a country route short on some worker;
  // the repair then takes others for it (28 here, 2.8 % of the pool). Placing the orphans into the
  // shortfalls first would avoid those drains: a possible refinement, not a safety matter.
  it('a worker leaving: its proxies go, and only a few others move to even out the routes', () => {
    const five = settled(workers(5));
    const four = balancedOwners(pool(workers(4), five), routes);
    const held = [...five].filter(([, o]) => o === 'gw-4').length;
    expect(held).toBeGreaterThan(0);
    expect(moved(five, four)).toBeGreaterThanOrEqual(held);
    expect(moved(five, four) - held).toBeLessThanOrEqual(POOL / 20);
    for (const [, o] of four) expect(o).not.toBe('gw-4');
  });

  it('a route of fewer proxies than workers: each proxy has one owner, spread, and stays put', () => {
    const ws = workers(7);
    const rareOnes: Record<string, string> = { rare: 'y' };
    const proxies: BalanceProxy[] = pool(ws).map((p, i) => ({ ...p, attributes: i < 3 ? rareOnes : {} }));
    const rare: BalanceRoute[] = [
      { name: 'rare', selector: { rare: 'y' } },
      { name: 'default', selector: {} },
    ];
    const first = balancedOwners(proxies, rare);
    const owners = ['px-0', 'px-1', 'px-2'].map((p) => first.get(p));
    expect(new Set(owners).size).toBe(3);
    const again = balancedOwners(
      proxies.map((p) => ({ ...p, current: first.get(p.name) ?? null })),
      rare,
    );
    expect(moved(first, again)).toBe(0);
  });
});
