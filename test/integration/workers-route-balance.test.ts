// Ownership gives every worker its share of each route, not only of the pool: two workers, a "shop" route
// whose two proxies plain rendezvous hashing would both give to one worker (the other would answer
// shop.example `503 no_upstream`), eight other proxies, the routing stored through the admin API, the API
// in-process and the snapshot function as its own process on the emulators. Each worker's applied snapshot
// ends up with one shop proxy that its own routing table offers for shop.example, and no proxy is ever
// usable in both workers' snapshots at once while they move.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileRouting, newLiveCounters } from '../../shared/src/domain/gateway/routing.js';
import { rendezvousOwner } from '../../shared/src/domain/workers/rendezvous.js';
import type { GatewaySnapshot } from '../../shared/src/messages/gateway-snapshot.js';
import { testProjectId } from '../support/emulators.js';
import {
  type ControlPlane,
  eventually,
  poolProxy,
  runWorkers,
  startControlPlane,
  type WorkerClient,
} from '../support/worker-client.js';

const WORKERS = ['gw-a', 'gw-b'];
const candidates = Array.from({ length: 40 }, (_, i) => `rb-${i}`);
const lucky = rendezvousOwner(candidates[0]!, WORKERS)!;
/** Two names plain rendezvous gives to the same worker. */
const SHOP = candidates.filter((n) => rendezvousOwner(n, WORKERS) === lucky).slice(0, 2);
const OTHERS = candidates.filter((n) => !SHOP.includes(n)).slice(0, 8);
const ROUTING = {
  routes: [
    { name: 'shop', match: { hosts: ['shop.example'] }, selector: { site: 'shop' }, policy: 'least-active' },
    { name: 'rest', match: { hosts: ['*'] }, policy: 'round-robin' },
  ],
};

let plane: ControlPlane;
let a: WorkerClient;
let b: WorkerClient;
let overlaps: string[] = [];
let stopWatching = () => {};

/** The shop proxies the worker's applied snapshot offers for shop.example. */
function shopUpstreams(s: GatewaySnapshot | null): string[] {
  if (!s) return [];
  // The worker's own compilation of its snapshot (functions/gateway/src/compile.ts), less credentials.
  const upstreams = s.proxies.map((p) => ({
    ...p,
    attributes: p.attributes ?? {},
    usableUntilMs: Date.parse(p.usableUntil),
    expiresAtMs: Date.parse(p.expiresAt),
    live: newLiveCounters(),
    auth: null,
  }));
  const table = compileRouting(s.routing, upstreams);
  return table.routes[table.exact.get('shop.example')!]!.candidates.map((c) => c.name).sort();
}

beforeAll(async () => {
  plane = await startControlPlane({ projectId: testProjectId('demo-rb'), workerIds: WORKERS });
  expect((await plane.admin('PUT', '/v1/gateway/routing', ROUTING)).status).toBe(200);
  let i = 0;
  for (const name of SHOP) await plane.proxies.create(poolProxy(name, ++i, { attributes: { site: 'shop' } }));
  for (const name of OTHERS)
    await plane.proxies.create(poolProxy(name, ++i, { attributes: { site: 'news' } }));
  a = plane.client('gw-a');
  b = plane.client('gw-b');
  // The safety property, sampled throughout: never usable in two workers' snapshots at once.
  ({ overlaps, stopWatching } = await runWorkers([a, b], 500));
  plane.startTicking(1000);
}, 120_000);

afterAll(async () => {
  stopWatching();
  await plane?.stop();
});

describe('route-balanced ownership on the emulators', () => {
  it('plain rendezvous would give both shop proxies to one worker (the case under test)', () => {
    expect(SHOP).toHaveLength(2);
    expect(SHOP.map((n) => rendezvousOwner(n, WORKERS))).toEqual([lucky, lucky]);
  });

  it('ends with one shop proxy in each worker’s snapshot, offered for shop.example, never in both', async () => {
    const settled = await eventually(
      () => {
        const [ua, ub] = [shopUpstreams(a.current), shopUpstreams(b.current)];
        const all = new Set(
          [...(a.current?.proxies ?? []), ...(b.current?.proxies ?? [])].map((p) => p.name),
        );
        return ua.length === 1 && ub.length === 1 && all.size === 10 ? { ua, ub } : undefined;
      },
      60_000,
      'each worker to carry one shop proxy and the pool to be covered',
    );
    expect([...settled.ua, ...settled.ub].sort()).toEqual([...SHOP].sort());
    const owners = new Map(
      [...(await plane.ownership.read()).records.values()]
        .filter((r) => r.drainEpoch === null)
        .map((r) => [r.proxy, r.owner]),
    );
    expect(SHOP.map((n) => owners.get(n)).sort()).toEqual(WORKERS);
    expect(overlaps).toEqual([]);
  });
});
