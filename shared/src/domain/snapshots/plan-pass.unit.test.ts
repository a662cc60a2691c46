import { describe, expect, it } from 'vitest';
import { MAX_SNAPSHOT_PROXIES } from '../../messages/gateway-snapshot.js';
import { WORKER_LIMITS } from '../../messages/worker-api.js';
import { HEALTHY_CONDITIONS } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import { acked } from '../../testing/worker-sessions.js';
import type { ProxyResource } from '../proxy.js';
import type { OwnershipRecord } from '../workers/ownership.js';
import { rendezvousOwner } from '../workers/rendezvous.js';
import { register } from '../workers/session.js';
import { DEFAULT_WORKER_SETTINGS } from '../workers/settings.js';
import type { StoredReport } from '../workers/usable-capacity.js';
import { DEFAULT_ROUTING } from './content.js';
import { leaseCandidates, type PassInput, type PassPlan, planPass, type WorkerView } from './plan-pass.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const proxy = (name: string, over: Partial<ProxyResource> = {}) =>
  aProxy({
    name,
    spec: externalSpec({ gatewayPool: true }),
    status: { phase: 'Ready', conditions: HEALTHY_CONDITIONS },
    ...over,
  });
/** An external proxy the gateway reaches over SOCKS5. */
const socksProxy = (name: string) =>
  proxy(name, {
    spec: externalSpec({
      gatewayPool: true,
      endpoint: { host: '203.0.113.7', port: 1080, protocol: 'socks5' },
    }),
  });
/** A session as registered: live, but it has ACKed no snapshot yet. */
const registered = (id: string, at = now, protocolVersion = 1) =>
  register(
    null,
    { workerId: id, instanceId: 'i', zone: 'z', protocolVersion, principal: 'p' },
    at,
    `s-${id}`,
    30_000,
  ).session;
/** A session that has ACKed a snapshot: one the planner gives proxies to. */
const session = (id: string, at = now, protocolVersion = 1) => acked(registered(id, at, protocolVersion));
const report = (id: string, over: Partial<StoredReport> = {}): StoredReport => ({
  workerId: id,
  sessionId: `s-${id}`,
  epoch: 5,
  receivedAt: now,
  draining: false,
  counts: [],
  ...over,
});
const view = (id: string, over: Partial<WorkerView> = {}): WorkerView => ({
  session: session(id),
  report: null,
  grantedUntil: later(100),
  ...over,
});
const rec = (proxy: string, owner: string, drainEpoch: number | null = null): OwnershipRecord => ({
  proxy,
  owner,
  since: 1,
  drainEpoch,
});

function input(over: Partial<PassInput>): PassInput {
  return {
    now,
    poolSpecs: [proxy('p1'), proxy('p2')],
    reclaimed: new Set(),
    leased: new Set(),
    epoch: 5,
    records: new Map(),
    workers: new Map([['w1', view('w1')]]),
    routing: DEFAULT_ROUTING,
    settings: DEFAULT_WORKER_SETTINGS,
    ...over,
  };
}

/** The "shop" route: hosts shop.example, the proxies with attribute site=shop. */
const SHOP_ROUTE = {
  name: 'shop',
  match: { hosts: ['shop.example'] },
  selector: { site: 'shop' },
  policy: 'least-active' as const,
};
const twoWorkers = () =>
  new Map([
    ['w1', view('w1')],
    ['w2', view('w2')],
  ]);
/**
 * A pass over the pool proxy p1 with its `records`, `w1` as given beside `w2` (a serving worker by
 * default), and the rest of the input as `over` says.
 */
const p1Beside = (
  records: Map<string, OwnershipRecord>,
  w1: WorkerView,
  w2: WorkerView = view('w2'),
  over: Partial<PassInput> = {},
) =>
  planPass(
    input({
      poolSpecs: [proxy('p1')],
      records,
      workers: new Map([
        ['w1', w1],
        ['w2', w2],
      ]),
      ...over,
    }),
  );
const shopProxy = (n: string, site = 'shop') =>
  proxy(n, { spec: externalSpec({ gatewayPool: true, attributes: { site } }) });

/** Twelve pool proxies over two workers, two of them "shop" ones that plain rendezvous gives to `first`. */
function shopFleet() {
  const names = Array.from({ length: 40 }, (_, i) => `q${i}`);
  const first = rendezvousOwner(names[0]!, ['w1', 'w2'])!;
  const shopNames = names.filter((n) => rendezvousOwner(n, ['w1', 'w2']) === first).slice(0, 2);
  const poolSpecs = names.slice(0, 12).map((n) => shopProxy(n, shopNames.includes(n) ? 'shop' : 'news'));
  return { workers: twoWorkers(), first, shopNames, poolSpecs };
}

describe('planPass', () => {
  it('assigns the pool and builds a snapshot for each live worker with a renewed grant', () => {
    const p = planPass(input({ workers: new Map([['w1', view('w1', { grantedUntil: later(10) })]]) }));
    expect(p.ownership.epoch).toBe(6);
    expect(p.builds).toEqual([
      expect.objectContaining({
        workerId: 'w1',
        sessionId: 's-w1',
        protocolVersion: 1, // the session's: what its snapshot may contain
        grant: later(180),
        draining: {},
      }),
    ]);
    expect(p.builds[0]!.owned.map((x) => x.name)).toEqual(['p1', 'p2']);
  });

  describe('a worker is given proxies only once its session has ACKed a snapshot', () => {
    // Assigned from its registration, a worker that died before taking its first snapshot left the
    // proxies it was given (and drained off the others) serving nobody until its grant lapsed.
    const fresh = (id: string) => view(id, { session: registered(id), grantedUntil: null });

    it('alone and never ACKed: nothing assigned, but an empty snapshot with a grant to ACK', () => {
      const p = planPass(input({ workers: new Map([['w1', fresh('w1')]]) }));
      expect(p.ownership).toEqual({ epoch: 5, changes: [] });
      expect(p.builds).toEqual([
        { workerId: 'w1', sessionId: 's-w1', protocolVersion: 1, grant: later(180), owned: [], draining: {} },
      ]);
      // Its first ACK recorded, the next pass gives it the pool.
      const after = planPass(
        input({ workers: new Map([['w1', { ...fresh('w1'), session: session('w1') }]]) }),
      );
      expect(after.ownership.changes.map((c) => [c.proxy, c.kind, c.next?.owner])).toEqual([
        ['p1', 'assigned', 'w1'],
        ['p2', 'assigned', 'w1'],
      ]);
      expect(after.builds[0]!.owned.map((x) => x.name)).toEqual(['p1', 'p2']);
    });

    it('beside a serving worker: no drain toward it until it ACKs, then its share', () => {
      const records = new Map([
        ['p1', rec('p1', 'w1')],
        ['p2', rec('p2', 'w1')],
      ]);
      const workers = new Map([
        ['w1', view('w1')],
        ['w2', fresh('w2')],
      ]);
      const p = planPass(input({ records, workers }));
      expect(p.ownership).toEqual({ epoch: 5, changes: [] });
      expect(p.builds.map((b) => [b.workerId, b.owned.map((x) => x.name), b.draining])).toEqual([
        ['w1', ['p1', 'p2'], {}],
        ['w2', [], {}],
      ]);
      expect(p.builds[1]!.grant).toEqual(later(180));
      // The same pass once w2 has ACKed: the route balance counts it short and drains one toward it.
      workers.set('w2', { ...fresh('w2'), session: session('w2') });
      const after = planPass(input({ records, workers }));
      expect(after.ownership.epoch).toBe(6);
      expect(after.ownership.changes).toEqual([
        expect.objectContaining({ kind: 'drain_started', next: expect.objectContaining({ owner: 'w1' }) }),
      ]);
    });

    it('unowned proxies go to the ACKed workers only, whatever rendezvous would pick', () => {
      const poolSpecs = Array.from({ length: 8 }, (_, i) => proxy(`q${i}`));
      const workers = new Map([
        ['w1', view('w1')],
        ['w2', fresh('w2')],
      ]);
      // Among both, rendezvous would give w2 some of them.
      expect(poolSpecs.some((x) => rendezvousOwner(x.name, ['w1', 'w2']) === 'w2')).toBe(true);
      const p = planPass(input({ poolSpecs, workers }));
      expect(new Set([...p.records.values()].map((r) => r.owner))).toEqual(new Set(['w1']));
      expect(p.records.size).toBe(8);
    });

    it('a new session under a worker id that owns proxies: drained until it ACKs, then the drains are cancelled', () => {
      // A process registering again under the same worker id (a pinned GATEWAY_WORKER_ID restarting).
      const records = new Map([
        ['p1', rec('p1', 'w1')],
        ['p2', rec('p2', 'w2')],
      ]);
      const workers = new Map([
        ['w1', view('w1')],
        ['w2', view('w2', { session: registered('w2') })],
      ]);
      const p = planPass(input({ records, workers }));
      expect(p.ownership.changes).toEqual([{ proxy: 'p2', kind: 'drain_started', next: rec('p2', 'w2', 6) }]);
      expect(p.builds[1]).toMatchObject({ workerId: 'w2', owned: [], draining: { p2: 6 } });
      // Its grant is still valid and it has not reported the drain done: the proxy waits for it, and once it
      // has ACKed, it keeps the proxy.
      workers.set('w2', view('w2'));
      const after = planPass(input({ records: p.records, workers, epoch: 6 }));
      expect(after.ownership.changes).toEqual([
        { proxy: 'p2', kind: 'drain_cancelled', next: rec('p2', 'w2') },
      ]);
      expect(after.builds[1]!.owned.map((x) => x.name)).toEqual(['p2']);
    });
  });

  it('gives each worker its share of every route, not only of the pool (route-balance.ts)', () => {
    const { workers, first, shopNames, poolSpecs } = shopFleet();
    const ownersOfShop = (routing: PassInput['routing']) => {
      const p = planPass(input({ poolSpecs, workers, routing }));
      return shopNames.map((n) => p.records.get(n)?.owner).sort();
    };
    // Plain rendezvous (no route to balance) gives both to one worker, and the other would answer
    // shop.example `503 no_upstream`.
    expect(ownersOfShop([])).toEqual([first, first]);
    expect(ownersOfShop([SHOP_ROUTE, ...DEFAULT_ROUTING])).toEqual(['w1', 'w2']);
  });

  it('a proxy held back by its leases covers no route: the worker it would go to gets another', () => {
    const workers = twoWorkers();
    const names = Array.from({ length: 40 }, (_, i) => `l${i}`);
    const to = (w: string) => names.filter((n) => rendezvousOwner(n, ['w1', 'w2']) === w);
    const [a, b] = to('w1') as [string, string];
    const [c] = to('w2') as [string];
    const poolSpecs = [a, b, c].map((n) => shopProxy(n));
    const owners = (leased: Set<string>) => {
      const p = planPass(input({ poolSpecs, workers, routing: [SHOP_ROUTE], leased }));
      return [a, b, c].map((n) => p.records.get(n)?.owner ?? null);
    };
    // Nothing leased: rendezvous already gives each worker one.
    expect(owners(new Set())).toEqual(['w1', 'w1', 'w2']);
    // c leased: it stays unowned, and w2 takes one of w1's two instead of having none for the route.
    const held = owners(new Set([c]));
    expect(held[2]).toBeNull();
    expect(held.slice(0, 2).sort()).toEqual(['w1', 'w2']);
  });

  it('a proxy excluded from a route covers none of it: its worker gets one that reaches the route', () => {
    const workers = twoWorkers();
    const [a1, a2, b1] = [shopProxy('a1'), shopProxy('a2'), shopProxy('b1')];
    const excluded = { ...b1, status: { ...b1.status, unreachableRoutes: ['shop'] } };
    const records = new Map([
      ['a1', rec('a1', 'w1')],
      ['a2', rec('a2', 'w1')],
      ['b1', rec('b1', 'w2')],
    ]);
    const plan = (poolSpecs: ProxyResource[]) =>
      planPass(input({ poolSpecs, workers, routing: [SHOP_ROUTE], records })).ownership.changes;
    expect(plan([a1, a2, b1])).toEqual([]);
    // b1 no longer reaches shop.example: w2 would answer it no_upstream, so one of w1's two is drained to it.
    expect(plan([a1, a2, excluded]).map((c) => c.kind)).toEqual(['drain_started']);
  });

  it('a SUSPECT proxy still covers its routes (it carries traffic): turning SUSPECT moves no ownership', () => {
    const workers = twoWorkers();
    const [a1, a2, b1] = [shopProxy('a1'), shopProxy('a2'), shopProxy('b1')];
    const suspect = {
      ...b1,
      status: { ...b1.status, conditions: [{ ...HEALTHY_CONDITIONS[0]!, reason: 'PassiveSuspect' }] },
    };
    const records = new Map([
      ['a1', rec('a1', 'w1')],
      ['a2', rec('a2', 'w1')],
      ['b1', rec('b1', 'w2')],
    ]);
    const planned = planPass(
      input({ poolSpecs: [a1, a2, suspect], workers, routing: [SHOP_ROUTE], records }),
    );
    // w2's only shop proxy is suspect: it keeps it (and picks it, failing open) rather than a drain per
    // SUSPECT episode; the episode is a snapshot change of the entry only (content.ts).
    expect(planned.ownership.changes).toEqual([]);
    expect(planned.builds.find((b) => b.workerId === 'w2')?.owned.map((p) => p.name)).toEqual(['b1']);
  });

  it('a draining proxy found leased keeps draining: no drain started and cancelled pass after pass', () => {
    // Only unowned and draining proxies are lease-checked (leaseCandidates). Were "leased" to take a
    // draining proxy out of the balance, a pass would cancel its drain (nothing left to move it for), the
    // next - no longer draining, so not lease-checked - would start it again, and so on while the leases
    // last: an epoch and two snapshots a pass.
    const workers = twoWorkers();
    const names = Array.from({ length: 40 }, (_, i) => `d${i}`);
    const [a, b] = names.filter((n) => rendezvousOwner(n, ['w1', 'w2']) === 'w1') as [string, string];
    const poolSpecs = [a, b].map((n) => shopProxy(n));
    // Both on w1, as rendezvous has them: the repair moves one to w2, which starts its drain.
    const records = new Map([
      [a, rec(a, 'w1')],
      [b, rec(b, 'w1')],
    ]);
    const first = planPass(input({ poolSpecs, workers, routing: [SHOP_ROUTE], records }));
    const started = first.ownership.changes.filter((c) => c.kind === 'drain_started').map((c) => c.proxy);
    expect(started).toHaveLength(1);
    const next = planPass(
      input({
        poolSpecs,
        workers,
        routing: [SHOP_ROUTE],
        records: first.records,
        epoch: first.ownership.epoch,
        leased: new Set(started),
      }),
    );
    expect(next.ownership.changes).toEqual([]);
  });

  it('leaves a proxy the repair moved with its owner while it cannot carry traffic: no drain per health blip', () => {
    // Two "shop" proxies that plain rendezvous gives to the same worker: the repair moves one.
    const { workers, first, shopNames, poolSpecs } = shopFleet();
    const routing = [SHOP_ROUTE, ...DEFAULT_ROUTING];
    const planned = planPass(input({ poolSpecs, workers, routing }));
    const moved = shopNames.find((n) => planned.records.get(n)?.owner !== first)!;
    expect(moved).toBeDefined();
    const steady = { workers, routing, records: planned.records, epoch: planned.ownership.epoch };
    expect(planPass(input({ ...steady, poolSpecs })).ownership.changes).toEqual([]);
    // It turns unhealthy: it stays with the worker the repair gave it to (rendezvous would drain it back).
    const down = poolSpecs.map((p) =>
      p.name === moved ? { ...p, status: { ...p.status, phase: 'Unhealthy' as const } } : p,
    );
    expect(planPass(input({ ...steady, poolSpecs: down })).ownership.changes).toEqual([]);
  });

  it('a cordoned proxy stays with its owner like an unhealthy one: no drain to another worker, none back', () => {
    const { workers, first, shopNames, poolSpecs } = shopFleet();
    const routing = [SHOP_ROUTE, ...DEFAULT_ROUTING];
    const planned = planPass(input({ poolSpecs, workers, routing }));
    const moved = shopNames.find((n) => planned.records.get(n)?.owner !== first)!;
    const steady = { workers, routing, records: planned.records, epoch: planned.ownership.epoch };
    const cordoned = poolSpecs.map((p) =>
      p.name === moved ? { ...p, spec: { ...p.spec, cordoned: true } } : p,
    );
    const pass = planPass(input({ ...steady, poolSpecs: cordoned }));
    expect(pass.ownership.changes).toEqual([]);
    // Its owner's build still holds it (the snapshot content is what leaves it out: content.ts).
    const owner = planned.records.get(moved)!.owner;
    expect(pass.builds.find((b) => b.workerId === owner)!.owned.map((x) => x.name)).toContain(moved);
    expect(planPass(input({ ...steady, poolSpecs })).ownership.changes).toEqual([]);
  });

  it('a lapsed session gets no snapshot and no renewal', () => {
    const p = planPass(
      input({ workers: new Map([['w1', view('w1', { session: session('w1', later(-60)) })]]) }),
    );
    expect(p.builds).toEqual([]);
    expect(p.ownership.changes).toEqual([]);
  });

  it.each<[string, Partial<PassInput>, string[], Record<string, number>]>([
    [
      'a deleted proxy is drained',
      { poolSpecs: [proxy('p1'), proxy('p2', { deletionRequestedAt: now })] },
      ['p1'],
      { p2: 6 },
    ],
    ['a reclaimed proxy is drained', { reclaimed: new Set(['p1']) }, ['p2'], { p1: 6 }],
    ['a proxy gone from the pool spec is drained', { poolSpecs: [proxy('p2')] }, ['p2'], { p1: 6 }],
  ])('%s: out of the snapshot, revoked, still owned', (_n, over, owned, draining) => {
    const records = new Map([
      ['p1', rec('p1', 'w1')],
      ['p2', rec('p2', 'w1')],
    ]);
    const p = planPass(input({ records, ...over }));
    expect(p.builds[0]!.owned.map((x) => x.name)).toEqual(owned);
    expect(p.builds[0]!.draining).toEqual(draining);
    for (const name of Object.keys(draining)) expect(p.records.get(name)?.owner).toBe('w1');
  });

  it('drain order: cleared only on a valid report at the drain epoch with zero counts', () => {
    const records = new Map([['p1', rec('p1', 'w1', 5)]]);
    const busy = view('w1', { report: report('w1', { counts: [{ proxy: 'p1', active: 1, reserved: 0 }] }) });
    const idleOld = view('w1', { report: report('w1', { epoch: 4 }) });
    const idle = view('w1', { report: report('w1') });
    const pool = { poolSpecs: [] as ProxyResource[] };
    expect(planPass(input({ ...pool, records, workers: new Map([['w1', busy]]) })).ownership.changes).toEqual(
      [],
    );
    expect(
      planPass(input({ ...pool, records, workers: new Map([['w1', idleOld]]) })).ownership.changes,
    ).toEqual([]);
    expect(planPass(input({ ...pool, records, workers: new Map([['w1', idle]]) })).ownership.changes).toEqual(
      [{ proxy: 'p1', kind: 'released', next: null }],
    );
  });

  it('a worker reporting draining (shutting down) keeps its snapshot but hands its proxies over', () => {
    const records = new Map([
      ['p1', rec('p1', 'w1')],
      ['p2', rec('p2', 'w1')],
    ]);
    // Still busy on p1: both are drained first (an idle one is released at once: below).
    const busy = report('w1', { draining: true, counts: [{ proxy: 'p1', active: 1, reserved: 0 }] });
    const workers = new Map([
      ['w1', view('w1', { report: busy })],
      ['w2', view('w2')],
    ]);
    const p = planPass(input({ records, workers }));
    expect(p.ownership.changes.every((c) => c.kind === 'drain_started')).toBe(true);
    expect(p.builds.map((b) => b.workerId)).toEqual(['w1', 'w2']);
    expect(p.builds[0]!.owned).toEqual([]);
  });

  it('a worker shutting down gets no renewed grant: it stopped pulling, and the grant it holds ends its drain', () => {
    // Both grants are due for renewal (100 s left, renewed under 150 s). A renewal would never reach w1 —
    // it stopped pulling at SIGTERM — and would only hold its proxies past the grant it does hold, should
    // it exit with a tunnel still open.
    const records = new Map([['p1', rec('p1', 'w1')]]);
    const busy = report('w1', { draining: true, counts: [{ proxy: 'p1', active: 1, reserved: 0 }] });
    const workers = new Map([
      ['w1', view('w1', { report: busy })],
      ['w2', view('w2')],
    ]);
    const p = planPass(input({ poolSpecs: [proxy('p1')], records, workers }));
    expect(p.ownership.changes).toEqual([
      { proxy: 'p1', kind: 'drain_started', next: { ...rec('p1', 'w1'), drainEpoch: 6 } },
    ]);
    // w1 still gets the snapshot that records its drain (revokeProxyIds), on the grant it has.
    expect(p.builds.map((b) => [b.workerId, b.grant, b.draining])).toEqual([
      ['w1', later(100), { p1: 6 }],
      ['w2', later(180), {}],
    ]);
    // Never granted anything (shut down in its start wait, before its first snapshot): nothing to build.
    const never = new Map([['w1', view('w1', { report: busy, grantedUntil: null })]]);
    expect(planPass(input({ workers: never })).builds).toEqual([]);
    // The grant the pass recorded over (plus the skew), the worker still live and busy: the proxy goes to w2.
    const ended = later(106);
    const stillLive = (id: string) =>
      view(id, {
        session: session(id, ended),
        report: { ...busy, receivedAt: ended },
        grantedUntil: p.builds[0]!.grant,
      });
    const after = p1Beside(
      new Map([['p1', rec('p1', 'w1', 6)]]),
      stillLive('w1'),
      view('w2', { session: session('w2', ended), grantedUntil: later(180) }),
      { now: ended, epoch: 6 },
    );
    expect(after.ownership.changes).toEqual([
      {
        proxy: 'p1',
        kind: 'released',
        next: { proxy: 'p1', owner: 'w2', since: 7, drainEpoch: null, uid: expect.any(String) },
      },
    ]);
  });

  describe('a worker that has stopped taking its snapshots (it owes an ACK past max_stale_age)', () => {
    // w1 ACKed version 1; version 2 went out 150 s ago (max_stale_age) and it has ACKed nothing since, yet
    // it still reports on its old bound, so its session is live. Both grants are due for renewal.
    const owed = { version: 2, since: later(-150) };
    const records = new Map([['p1', rec('p1', 'w1')]]);
    const stalled = (over: Partial<WorkerView> = {}) => view('w1', { ackOwed: owed, ...over });

    it('is given nothing and its grant is not renewed: its proxies drain, and move once the grant lapses', () => {
      const p = p1Beside(records, stalled());
      expect(p.ownership.changes).toEqual([
        { proxy: 'p1', kind: 'drain_started', next: { ...rec('p1', 'w1'), drainEpoch: 6 } },
      ]);
      expect(p.overdue).toEqual([{ workerId: 'w1', ...owed, withheld: true }]);
      // It still gets the snapshot recording the drain, should it take one — on the grant it has.
      expect(p.builds.map((b) => [b.workerId, b.grant, b.owned.length, b.draining])).toEqual([
        ['w1', later(100), 0, { p1: 6 }],
        ['w2', later(180), 0, {}],
      ]);
      // Its grant lapsed (plus the skew), still live and reporting: the proxy goes to w2.
      const ended = later(106);
      const after = p1Beside(
        new Map([['p1', rec('p1', 'w1', 6)]]),
        stalled({ session: session('w1', ended), grantedUntil: later(100) }),
        view('w2', { session: session('w2', ended), grantedUntil: later(180) }),
        { now: ended, epoch: 6 },
      );
      expect(after.ownership.changes).toEqual([
        {
          proxy: 'p1',
          kind: 'released',
          next: { proxy: 'p1', owner: 'w2', since: 7, drainEpoch: null, uid: expect.any(String) },
        },
      ]);
    });

    it('a second short of max_stale_age, or once it ACKs the owed version or a later one, it is a worker like any', () => {
      const keeps = (w1: WorkerView) => p1Beside(records, w1);
      const young = keeps(stalled({ ackOwed: { version: 2, since: later(-149) } }));
      const settled = keeps(stalled({ session: acked(registered('w1'), 3) }));
      for (const p of [young, settled]) {
        expect(p.overdue).toEqual([]);
        expect(p.ownership.changes.filter((c) => c.proxy === 'p1')).toEqual([]);
        expect(p.builds.map((b) => [b.workerId, b.grant, b.owned.map((o) => o.name)])).toEqual([
          ['w1', later(180), ['p1']],
          ['w2', later(180), []],
        ]);
      }
    });

    it('registered again (its session lapsed: reports refused once the epoch moved), its grant is not renewed before it ACKs', () => {
      // The new session owes nothing yet; renewed, it lapsed and registered again before its debt came due,
      // and the grant never ran out: the proxies draining off it never moved.
      const again = stalled({ session: registered('w1'), ackOwed: null });
      const p = p1Beside(new Map([['p1', rec('p1', 'w1', 6)]]), again, undefined, { epoch: 6 });
      expect(p.builds.map((b) => [b.workerId, b.grant])).toEqual([
        ['w1', later(100)],
        ['w2', later(180)],
      ]);
      // Once that grant lapsed (plus the skew) the proxy moves to w2, a worker that serves; w1, owning
      // nothing now, is granted as a new worker is — nothing of anyone's waits on it.
      const lapsed = p1Beside(
        new Map([['p1', rec('p1', 'w1', 6)]]),
        stalled({ session: registered('w1', later(106)), ackOwed: null, grantedUntil: later(100) }),
        view('w2', { session: session('w2', later(106)), grantedUntil: later(180) }),
        { now: later(106), epoch: 6 },
      );
      expect(lapsed.builds.find((b) => b.workerId === 'w1')?.owned).toEqual([]);
      expect(lapsed.ownership.changes).toEqual([
        {
          proxy: 'p1',
          kind: 'released',
          next: { proxy: 'p1', owner: 'w2', since: 7, drainEpoch: null, uid: expect.any(String) },
        },
      ]);
      // A new worker owning nothing is granted at once, as before: nothing of anyone's waits on it.
      const fresh = p1Beside(new Map([['p1', rec('p1', 'w2')]]), view('w1', { session: registered('w1') }));
      expect(fresh.builds.find((b) => b.workerId === 'w1')?.grant).toEqual(later(180));
    });

    it('never ACKed at all: no grant renewed past max_stale_age either', () => {
      const p = planPass(
        input({
          workers: new Map([
            ['w1', view('w1', { session: registered('w1'), ackOwed: { version: 1, since: later(-150) } })],
            ['w2', view('w2')],
          ]),
        }),
      );
      expect(p.overdue.map((o) => [o.workerId, o.withheld])).toEqual([['w1', true]]);
      expect(p.builds.map((b) => [b.workerId, b.grant])).toEqual([
        ['w1', later(100)],
        ['w2', later(180)],
      ]);
    });

    it('its grant swept (a day without an epoch change): a snapshot granting nothing past now, to ACK', () => {
      const p = p1Beside(new Map(), stalled({ grantedUntil: null }));
      expect(p.builds.map((b) => [b.workerId, b.grant])).toEqual([
        ['w1', now],
        ['w2', later(180)],
      ]);
      // The header records that grant: the next pass keeps it (no new version for w1 every pass).
      const next = p1Beside(
        new Map(),
        stalled({ session: session('w1', later(60)), grantedUntil: now }),
        view('w2', { session: session('w2', later(60)), grantedUntil: later(180) }),
        { now: later(60) },
      );
      expect(next.builds.find((b) => b.workerId === 'w1')?.grant).toEqual(now);
    });

    it('another worker takes its snapshots only while it owes nothing older than the resend period', () => {
      // The ACK path broke between a tick's publish and w2's ACK of it: w2 owes since a tick after w1.
      const withW2Owing = (since: number) =>
        p1Beside(records, stalled(), view('w2', { ackOwed: { version: 9, since: later(since) } }));
      const broken = withW2Owing(-90);
      expect(broken.overdue.map((o) => [o.workerId, o.withheld])).toEqual([['w1', false]]);
      expect(broken.ownership.changes).toEqual([]);
      // w2's snapshot went out a moment ago and its ACK is on the way: it takes its snapshots.
      const young = withW2Owing(-29);
      expect(young.overdue.map((o) => [o.workerId, o.withheld])).toEqual([['w1', true]]);
      expect(young.ownership.changes.map((c) => c.kind)).toEqual(['drain_started']);
    });

    it('when no worker takes its snapshots, none is withheld: ownership and grants stay as they are', () => {
      // A fault every worker sees at once (a release whose snapshots none applies, the ACK path broken):
      // draining toward nobody would lapse every session and hand the pool out again from scratch.
      const both = new Map([
        ['w1', stalled()],
        ['w2', view('w2', { ackOwed: { version: 9, since: later(-200) } })],
      ]);
      const p = planPass(
        input({
          poolSpecs: [proxy('p1'), proxy('p2')],
          records: new Map([...records, ['p2', rec('p2', 'w2')]]),
          workers: both,
        }),
      );
      expect(p.overdue.map((o) => [o.workerId, o.withheld])).toEqual([
        ['w1', false],
        ['w2', false],
      ]);
      expect(p.ownership.changes).toEqual([]);
      expect(p.builds.map((b) => [b.workerId, b.grant, b.owned.map((o) => o.name)])).toEqual([
        ['w1', later(180), ['p1']],
        ['w2', later(180), ['p2']],
      ]);
    });
  });

  it('a worker that shut down idle before any drain started hands its proxies over at the next pass', () => {
    // SIGTERM on an idle instance: its draining report and its last one go back to back, before the pass
    // that report asks for has started a single drain — and the worker then exits: no report will ever
    // come at a drain's epoch, nor in time for a pass after that one.
    const records = new Map([
      ['p1', rec('p1', 'w1')],
      ['p2', rec('p2', 'w1')],
    ]);
    const idle = view('w1', { report: report('w1', { draining: true }) });
    const busy = view('w1', {
      report: report('w1', { draining: true, counts: [{ proxy: 'p1', active: 1, reserved: 0 }] }),
    });
    const workers = (w1: WorkerView) =>
      new Map([
        ['w1', w1],
        ['w2', view('w2')],
      ]);
    const handed = planPass(input({ records, workers: workers(idle) }));
    expect(handed.ownership.changes).toEqual([
      {
        proxy: 'p1',
        kind: 'released',
        next: { proxy: 'p1', owner: 'w2', since: 6, drainEpoch: null, uid: expect.any(String) },
      },
      {
        proxy: 'p2',
        kind: 'released',
        next: { proxy: 'p2', owner: 'w2', since: 6, drainEpoch: null, uid: expect.any(String) },
      },
    ]);
    // Anything still in flight on it: drained first, as before.
    const draining = planPass(input({ records, workers: workers(busy) }));
    expect(draining.ownership.changes.map((c) => c.kind)).toEqual(['drain_started', 'drain_started']);
  });

  it('a worker that shut down idle hands its proxies over at whichever pass comes next, however late', () => {
    // Its last report is its last word: it exits, so no fresher report comes. A pass that runs only after
    // the report's TTL (15 s: the one the report asked for was busy or failed), or after the session lapsed,
    // must not start a drain no report will end — the proxy would serve no one until the grant lapsed.
    const records = new Map([['p1', rec('p1', 'w1')]]);
    const lastWord = report('w1', { draining: true, counts: [], receivedAt: later(-20) });
    const handedAt = (w1: WorkerView) => p1Beside(records, w1).ownership.changes;
    const released = [
      {
        proxy: 'p1',
        kind: 'released',
        next: { proxy: 'p1', owner: 'w2', since: 6, drainEpoch: null, uid: expect.any(String) },
      },
    ];
    expect(handedAt(view('w1', { report: lastWord }))).toEqual(released);
    // Its session lapsed too (30 s after that report), its grant still running: handed over all the same.
    const lapsed = view('w1', { session: session('w1', later(-40)), report: lastWord });
    expect(handedAt(lapsed)).toEqual(released);
    // A new session of the worker (another process, which may serve p1) supersedes that word.
    const superseded = view('w1', { report: { ...lastWord, sessionId: 's-old' } });
    expect(handedAt(superseded).filter((c) => c.kind === 'released')).toEqual([]);
  });

  it('a worker shutting down with nothing in flight releases at the next pass, from its old epoch', () => {
    // It stopped pulling at SIGTERM, so it never ACKs the drain's epoch: its report stays at epoch 5.
    const shutDown = view('w1', { report: report('w1', { draining: true, epoch: 5 }) });
    const busy = view('w1', {
      report: report('w1', { draining: true, epoch: 5, counts: [{ proxy: 'p1', active: 1, reserved: 0 }] }),
    });
    const records = new Map([['p1', rec('p1', 'w1', 6)]]);
    const pool = { poolSpecs: [proxy('p1')], epoch: 6 };
    const idle = planPass(
      input({
        ...pool,
        records,
        workers: new Map([
          ['w1', shutDown],
          ['w2', view('w2')],
        ]),
      }),
    );
    expect(idle.ownership.changes[0]).toMatchObject({ proxy: 'p1', kind: 'released' });
    const inFlight = planPass(
      input({
        ...pool,
        records,
        workers: new Map([
          ['w1', busy],
          ['w2', view('w2')],
        ]),
      }),
    );
    expect(inFlight.ownership.changes).toEqual([]);
  });

  it('records left at the next epoch by a cut-off chunked commit move the epoch, with no change left', () => {
    // The state is at 5; a pass's earlier chunk wrote p1 at 6 (assigned) and p2's drain at 6, then stopped.
    const records = new Map([
      ['p1', { ...rec('p1', 'w1'), since: 6 }],
      ['p2', rec('p2', 'w1', 6)],
    ]);
    const p = planPass(input({ poolSpecs: [proxy('p1')], records }));
    expect(p.ownership).toEqual({ epoch: 6, changes: [] });
    expect(p.builds[0]!.owned.map((o) => o.name)).toEqual(['p1']);
    expect(p.builds[0]!.draining).toEqual({ p2: 6 });
    // A record edited by hand to a far epoch is not a held one: it does not move the epoch every pass.
    const far = new Map([['p1', { ...rec('p1', 'w1'), since: 60 }]]);
    expect(planPass(input({ poolSpecs: [proxy('p1')], records: far })).ownership.epoch).toBe(5);
    // Once the state is at 6, nothing is held: a steady fleet plans no epoch.
    expect(planPass(input({ poolSpecs: [proxy('p1')], records, epoch: 6 })).ownership).toEqual({
      epoch: 6,
      changes: [],
    });
    expect(
      planPass(input({ poolSpecs: [proxy('p1')], records: new Map([['p1', rec('p1', 'w1')]]) })).ownership,
    ).toEqual({
      epoch: 5,
      changes: [],
    });
  });

  it('an unowned proxy with active leases waits; only unowned or draining proxies are lease-checked', () => {
    expect(planPass(input({ leased: new Set(['p1']) })).ownership.changes.map((c) => c.proxy)).toEqual([
      'p2',
    ]);
    const records = new Map([
      ['p1', rec('p1', 'w1')],
      ['p2', rec('p2', 'w1', 3)],
    ]);
    // Asked by instance: the leases of a deleted proxy of the same name do not hold a candidate back.
    const [p1, p2, p3] = [proxy('p1'), proxy('p2'), proxy('p3')];
    expect(leaseCandidates(input({ poolSpecs: [p1, p2, p3], records }))).toEqual([
      { name: 'p2', uid: p2.uid },
      { name: 'p3', uid: p3.uid },
    ]);
  });

  it('every proxy a pass hands to a new owner was lease-checked, over many mixed fleets', () => {
    // The store's commit claims only proxies whose lease state was read (ownership-store.ts): a proxy
    // handed over unread would reach a worker while a crawler holds a lease on it. Owned, not draining,
    // it may move unread: a proxy a worker holds is never leased (workers/leasable.ts).
    let seed = 7;
    // mulberry32: small, seeded, and exact in 32-bit integer arithmetic.
    const rnd = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    let handedOver = 0;
    for (let c = 0; c < 400; c++) {
      const workers = new Map<string, WorkerView>();
      for (let i = 0; i < rnd(4); i++) {
        const id = `w${i}`;
        const kind = rnd(5);
        const protocol = rnd(2) === 0 ? 1 : 4;
        workers.set(
          id,
          kind === 0
            ? view(id, { session: registered(id, now, protocol) })
            : kind === 1
              ? view(id, { session: session(id, later(-120), protocol), grantedUntil: later(-60) })
              : kind === 2
                ? view(id, { session: session(id, now, protocol), report: report(id, { draining: true }) })
                : view(id, { session: session(id, now, protocol) }),
        );
      }
      const poolSpecs: ProxyResource[] = [];
      const records = new Map<string, OwnershipRecord>();
      const reclaimed = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const name = `x${i}`;
        const p = rnd(2) === 0 ? socksProxy(name) : proxy(name);
        poolSpecs.push(rnd(6) === 0 ? { ...p, deletionRequestedAt: now } : p);
        if (rnd(6) === 0) reclaimed.add(name);
        const owner = rnd(5);
        if (owner < 4) records.set(name, rec(name, `w${owner}`, rnd(2) === 0 ? null : 3));
      }
      const x = input({ poolSpecs, records, reclaimed, workers });
      const checked = new Set(leaseCandidates(x).map((p) => p.name));
      for (const change of planPass(x).ownership.changes) {
        const before = records.get(change.proxy);
        if (!change.next || change.next.owner === before?.owner) continue;
        if (before && before.drainEpoch === null) continue;
        handedOver++;
        expect({ case: c, proxy: change.proxy, checked: checked.has(change.proxy) }).toEqual({
          case: c,
          proxy: change.proxy,
          checked: true,
        });
      }
    }
    // The cases do hand proxies over (unowned and draining ones, SOCKS5 and HTTP): not a vacuous check.
    expect(handedOver).toBeGreaterThan(200);
  });

  it('no lease is read for a proxy no worker could take in this pass: the planner gives it no owner', () => {
    const [deleting, reclaimed, free, socks] = [
      proxy('d', { deletionRequestedAt: now }),
      proxy('r'),
      proxy('f'),
      socksProxy('s'),
    ];
    const poolSpecs = [deleting, reclaimed, free, socks];
    const names = (over: Partial<PassInput>) =>
      leaseCandidates(input({ poolSpecs, reclaimed: new Set(['r']), ...over })).map((c) => c.name);
    // Only protocol-1 workers: the SOCKS5 proxy has no taker; deleted and reclaimed ones leave the pool.
    expect(names({})).toEqual(['f']);
    expect(names({ workers: new Map([['w4', view('w4', { session: session('w4', now, 4) })]]) })).toEqual([
      'f',
      's',
    ]);
    // No worker that could be given anything — none at all, one not yet ACKed, one shutting down, one
    // whose session lapsed: every lease read would decide nothing.
    for (const workers of [
      new Map<string, WorkerView>(),
      new Map([['w1', view('w1', { session: registered('w1') })]]),
      new Map([['w1', view('w1', { report: report('w1', { draining: true }) })]]),
      new Map([['w1', view('w1', { session: session('w1', later(-120)) })]]),
    ])
      expect(names({ workers })).toEqual([]);
    // What it leaves out is what planPass never assigns, leased or not.
    for (const workers of [new Map<string, WorkerView>(), new Map([['w1', view('w1')]])]) {
      const plan = planPass(input({ poolSpecs, reclaimed: new Set(['r']), workers }));
      const assigned = plan.ownership.changes.filter((c) => c.kind === 'assigned').map((c) => c.proxy);
      expect(assigned.filter((p) => !names({ workers }).includes(p))).toEqual([]);
    }
  });

  describe('SOCKS5 proxies go only to workers of protocol 4 (a worker below refuses the whole snapshot)', () => {
    const socks = ['s1', 's2', 's3', 's4', 's5', 's6'].map(socksProxy);
    const http = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((n) => proxy(n));
    const at = (id: string, version: number) => view(id, { session: session(id, now, version) });
    const ownerOf = (p: ReturnType<typeof planPass>) =>
      Object.fromEntries([...p.records.values()].map((r) => [r.proxy, r.owner]));

    it('a mixed fleet: every SOCKS5 proxy to the protocol-4 worker, HTTP ones over both, in one epoch', () => {
      const workers = new Map([
        ['w-old', at('w-old', 3)],
        ['w-new', at('w-new', 4)],
      ]);
      const p = planPass(input({ poolSpecs: [...socks, ...http], workers }));
      const owners = ownerOf(p);
      for (const s of socks) expect(owners[s.name]).toBe('w-new');
      // The default route's twelve proxies, six a worker: the old worker's share is every HTTP one — it
      // is not starved for being unable to carry SOCKS5 (route-balance.ts).
      for (const h of http) expect(owners[h.name]).toBe('w-old');
      expect(p.ownership.epoch).toBe(6);
      expect(p.ownership.changes.every((c) => c.next?.since === 6)).toBe(true);
      expect(p.ownership.changes.map((c) => c.proxy)).toEqual(
        [...p.ownership.changes.map((c) => c.proxy)].sort(),
      );
      const old = p.builds.find((b) => b.workerId === 'w-old')!;
      expect(old.owned.some((o) => o.name.startsWith('s'))).toBe(false);
    });

    it('only workers below 4: a SOCKS5 proxy stays unowned, HTTP proxies are assigned as before', () => {
      const p = planPass(
        input({ poolSpecs: [socks[0]!, http[0]!], workers: new Map([['w1', at('w1', 3)]]) }),
      );
      expect(ownerOf(p)).toEqual({ h1: 'w1' });
      expect(p.builds[0]!.owned.map((o) => o.name)).toEqual(['h1']);
    });

    it('a SOCKS5 proxy owned by a worker that came back below 4 is drained off it, then goes to a protocol-4 one', () => {
      const records = new Map([['s1', rec('s1', 'w-old')]]);
      const workers = new Map([
        ['w-old', at('w-old', 3)],
        ['w-new', at('w-new', 4)],
      ]);
      const p = planPass(input({ poolSpecs: [socks[0]!], records, workers }));
      expect(p.ownership.changes).toEqual([
        { proxy: 's1', kind: 'drain_started', next: { ...rec('s1', 'w-old'), drainEpoch: 6 } },
      ]);
      expect(p.builds.find((b) => b.workerId === 'w-old')!.owned).toEqual([]);
      const drained = new Map([
        [
          'w-old',
          view('w-old', { session: session('w-old', now, 3), report: report('w-old', { epoch: 6 }) }),
        ],
        ['w-new', at('w-new', 4)],
      ]);
      const next = planPass(
        input({ poolSpecs: [socks[0]!], records: p.records, workers: drained, epoch: 6 }),
      );
      expect(next.ownership.changes).toEqual([
        {
          proxy: 's1',
          kind: 'released',
          next: { proxy: 's1', owner: 'w-new', since: 7, drainEpoch: null, uid: expect.any(String) },
        },
      ]);
    });
  });
});

// One fixture, renamed: 20,001 proxies built through aProxy would cost more than the planning does.
const base = proxy('base');
const pool = (n: number, from = 0, prefix = 'big-', attributes: Record<string, string> = {}) =>
  Array.from({ length: n }, (_, i) => ({
    ...base,
    name: `${prefix}${String(from + i).padStart(6, '0')}`,
    spec: { ...base.spec, attributes },
  }));
/**
 * Passes run one after another from `x`, each on the records and epoch the last one left, every worker
 * reporting at that epoch with nothing in use (so a drain started is drained by the next pass).
 */
const passes = (x: PassInput, cap: number, n: number) => {
  const out: PassPlan[] = [];
  let { records, epoch } = x;
  for (let k = 0; k < n; k++) {
    const workers = new Map([...x.workers].map(([id, w]) => [id, { ...w, report: report(id, { epoch }) }]));
    const p = planPass({ ...x, records, epoch, workers }, cap);
    out.push(p);
    records = p.records;
    epoch = p.ownership.epoch;
  }
  return out;
};
const ownerOf = (p: PassPlan) => {
  const n = new Map<string, number>();
  for (const r of p.records.values()) n.set(r.owner, (n.get(r.owner) ?? 0) + 1);
  return n;
};

describe('planPass: no worker past what one snapshot may carry (MAX_SNAPSHOT_PROXIES, share-cap.ts)', () => {
  const within = (p: ReturnType<typeof planPass>, cap = MAX_SNAPSHOT_PROXIES) => {
    for (const b of p.builds) expect(b.owned.length).toBeLessThanOrEqual(cap);
  };
  const NEWS_ROUTE = {
    ...SHOP_ROUTE,
    name: 'news',
    match: { hosts: ['news.example'] },
    selector: { site: 'news' },
  };
  it('the default cap is MAX_SNAPSHOT_PROXIES: one worker and one proxy more gets the cap, one unassigned', () => {
    const poolSpecs = pool(MAX_SNAPSHOT_PROXIES + 1);
    const p = planPass(input({ poolSpecs }));
    within(p);
    expect(p.builds[0]!.owned).toHaveLength(MAX_SNAPSHOT_PROXIES);
    expect(p.cap).toEqual({
      cap: MAX_SNAPSHOT_PROXIES,
      capped: [{ workerId: 'w1', share: MAX_SNAPSHOT_PROXIES + 1 }],
      moved: 0,
      unassigned: 1,
    });
    const left = poolSpecs.at(-1)!.name;
    expect(p.records.has(left)).toBe(false);
    // The next pass, from what this one committed, changes nothing: the left-over one is not handed out.
    const next = planPass(input({ poolSpecs, records: p.records, epoch: p.ownership.epoch }));
    expect(next.ownership.changes).toEqual([]);
    expect(next.cap.unassigned).toBe(1);
  });

  it('two workers and more proxies than one may own: all assigned, both within the cap, nothing capped', () => {
    // 15 proxies, cap 10: plain rendezvous would give one worker more than 10 (the names are chosen so).
    const names = pool(60).filter((q) => rendezvousOwner(q.name, ['w1', 'w2']) === 'w1');
    const poolSpecs = [
      ...names.slice(0, 13),
      ...pool(60)
        .filter((q) => !names.includes(q))
        .slice(0, 2),
    ];
    const p = planPass(input({ poolSpecs, workers: twoWorkers() }), 10);
    within(p, 10);
    expect(p.ownership.changes).toHaveLength(15);
    expect(p.builds.reduce((n, b) => n + b.owned.length, 0)).toBe(15);
    expect(p.cap.capped).toEqual([]);
  });

  it('a worker that already owns more than the cap drains the excess, then releases it to nobody', () => {
    const cap = 10;
    const over = 14;
    const poolSpecs = pool(over);
    const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
    const p = planPass(input({ poolSpecs, records }), cap);
    within(p, cap);
    expect(p.builds[0]!.owned).toHaveLength(cap);
    expect(p.ownership.changes.every((c) => c.kind === 'drain_started')).toBe(true);
    expect(p.ownership.changes).toHaveLength(over - cap);
    expect(Object.keys(p.builds[0]!.draining)).toHaveLength(over - cap);
    // Still draining, not drained: the drains stand (not cancelled by a balance that starts from the owner).
    const waiting = planPass(input({ poolSpecs, records: p.records, epoch: 6 }), cap);
    expect(waiting.ownership.changes).toEqual([]);
    within(waiting, cap);
    // Reported drained at the drain epoch: released, to nobody (w1 is full), and none handed back.
    const drained = new Map([['w1', view('w1', { report: report('w1', { epoch: 6 }) })]]);
    const released = planPass(input({ poolSpecs, records: p.records, workers: drained, epoch: 6 }), cap);
    expect(released.ownership.changes).toHaveLength(over - cap);
    expect(released.ownership.changes.every((c) => c.kind === 'released' && c.next === null)).toBe(true);
    expect(released.records.size).toBe(cap);
    within(released, cap);
  });

  it('a worker over the cap drains its excess to a worker with room: released to it, then nothing moves', () => {
    // In no route (shop is the only one): the balance keeps them all on w1; the cap moves four to w2.
    const poolSpecs = pool(14);
    const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
    const [drain, release, settled] = passes(
      input({ poolSpecs, records, workers: twoWorkers(), routing: [SHOP_ROUTE] }),
      10,
      3,
    );
    expect(drain!.cap).toEqual({ cap: 10, capped: [{ workerId: 'w1', share: 14 }], moved: 4, unassigned: 0 });
    expect(drain!.ownership.changes.map((c) => c.kind)).toEqual(Array(4).fill('drain_started'));
    expect(release!.ownership.changes).toHaveLength(4);
    expect(release!.ownership.changes.every((c) => c.kind === 'released' && c.next?.owner === 'w2')).toBe(
      true,
    );
    expect(ownerOf(release!)).toEqual(
      new Map([
        ['w1', 10],
        ['w2', 4],
      ]),
    );
    // Planned from the records it starts with (w1 still owning 14, four draining), this pass is capped too.
    expect(release!.cap.moved).toBe(4);
    expect(settled!.ownership.changes).toEqual([]);
    expect(settled!.cap.capped).toEqual([]);
  });

  it('a worker at the cap gains a route it lacks by a swap while another has room, then nothing moves', () => {
    // Cold review of f3e76ba4: w1 full of proxies in no route, w2 with the only shop and news proxies. A
    // plain move into w1 was trimmed back every pass (capped, moved 1, no change): w1 never served shop.
    const poolSpecs = [
      ...pool(10, 0, 'x-', { site: 'x' }),
      ...pool(2, 0, 'shop-', { site: 'shop' }),
      ...pool(2, 0, 'news-', { site: 'news' }),
    ];
    const records = new Map(
      poolSpecs.map((q) => [q.name, rec(q.name, q.name.startsWith('x-') ? 'w1' : 'w2')]),
    );
    const plans = passes(
      input({ poolSpecs, records, workers: twoWorkers(), routing: [SHOP_ROUTE, NEWS_ROUTE] }),
      10,
      4,
    );
    for (const p of plans) {
      expect(p.cap.capped).toEqual([]);
      within(p, 10);
    }
    const last = plans.at(-1)!;
    const has = (site: string) =>
      [...last.records.values()].some((r) => r.owner === 'w1' && r.proxy.startsWith(`${site}-`));
    expect(has('shop')).toBe(true);
    expect(has('news')).toBe(true);
    expect(ownerOf(last)).toEqual(
      new Map([
        ['w1', 10],
        ['w2', 4],
      ]),
    );
    // Settled within two passes (drain, release) and stable after.
    expect(plans[2]!.ownership.changes).toEqual([]);
    expect(last.ownership.changes).toEqual([]);
  });
});

describe('planPass: no worker draining more than its report carries (WORKER_LIMITS.maxCounts, drain-budget.ts)', () => {
  const max = WORKER_LIMITS.maxCounts;
  /** Per worker, the proxies it is draining once the pass is committed. */
  const drainingOf = (p: PassPlan) => {
    const n = new Map<string, number>();
    for (const r of p.records.values()) if (r.drainEpoch !== null) n.set(r.owner, (n.get(r.owner) ?? 0) + 1);
    return n;
  };
  const mostDraining = (p: PassPlan) => Math.max(0, ...drainingOf(p).values());
  /** Passes over 18,000 proxies take seconds: more than the unit default. */
  const LARGE = 30_000;

  it(
    'a worker joining beside one owning far more than maxCounts: drains start in batches, the balance goes on',
    () => {
      // Audit: one pass started 9,000 drains on w1 — its report carries 8,000, the cut ones read as drained,
      // and the next pass released them to w2 while w1's tunnels through them still ran (two owners).
      const poolSpecs = pool(2 * max + 2_000);
      const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
      const plans = passes(input({ poolSpecs, records, workers: twoWorkers() }), MAX_SNAPSHOT_PROXIES, 4);
      for (const p of plans) expect(mostDraining(p)).toBeLessThanOrEqual(max);
      const [first, second, third, settled] = plans;
      expect(drainingOf(first!)).toEqual(new Map([['w1', max]]));
      expect([first!.drainsHeld, settled!.drainsHeld]).toEqual([1_000, 0]);
      // The drains ended: released to w2, and the moves held back start now (the balance starts from the
      // current owners and still finds w2 short).
      expect(first!.builds.find((b) => b.workerId === 'w1')!.owned).toHaveLength(2_000 + max);
      expect(second!.ownership.changes.filter((c) => c.kind === 'released')).toHaveLength(max);
      expect(drainingOf(second!)).toEqual(new Map([['w1', 1_000]]));
      expect(ownerOf(third!)).toEqual(
        new Map([
          ['w1', max + 1_000],
          ['w2', max + 1_000],
        ]),
      );
      expect(settled!.ownership.changes).toEqual([]);
    },
    LARGE,
  );

  it(
    'a deleted proxy drains whatever the count: only moves its owner could have kept wait',
    () => {
      const poolSpecs = pool(2 * max + 2_000).map((q, i) =>
        i % 18 === 0 ? { ...q, deletionRequestedAt: now } : q,
      );
      const deleted = poolSpecs.filter((q) => q.deletionRequestedAt !== null).map((q) => q.name);
      const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
      const p = planPass(input({ poolSpecs, records, workers: twoWorkers() }));
      expect(deleted).toHaveLength(1_000);
      for (const name of deleted) expect(p.records.get(name)?.drainEpoch).toBe(6);
      expect(drainingOf(p)).toEqual(new Map([['w1', max]]));
    },
    LARGE,
  );

  it('a worker over the snapshot cap drains down to it past the budget: else it could take no snapshot', () => {
    // Fourteen owned by w1, cap 10, at most two draining: the share cap moves four to w2, and all four
    // drain — held back, w1 would keep twelve in a snapshot that may carry ten.
    const poolSpecs = pool(14);
    const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
    const p = planPass(input({ poolSpecs, records, workers: twoWorkers(), routing: [SHOP_ROUTE] }), 10, 2);
    expect(drainingOf(p)).toEqual(new Map([['w1', 4]]));
    expect(p.builds.find((b) => b.workerId === 'w1')!.owned).toHaveLength(10);
  });

  it('a worker shutting down hands everything over whatever the count: it may own none of it', () => {
    const poolSpecs = pool(6);
    const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
    const busy = report('w1', {
      draining: true,
      counts: [{ proxy: poolSpecs[0]!.name, active: 1, reserved: 0 }],
    });
    const workers = new Map([
      ['w1', view('w1', { report: busy })],
      ['w2', view('w2')],
    ]);
    const p = planPass(input({ poolSpecs, records, workers }), MAX_SNAPSHOT_PROXIES, 2);
    expect(drainingOf(p)).toEqual(new Map([['w1', 6]]));
  });

  it("a narrow route's moves start before the default route's: a new worker is not left without it", () => {
    // Cold review of e48aee2b: held back by name alone, the shop proxies (sorting last) waited behind every
    // default-route move, and w2 answered shop.example 503 no_upstream for drain cycles.
    const poolSpecs = [...pool(26, 0, 'a-'), ...pool(4, 0, 'z-shop-', { site: 'shop' })];
    const records = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
    const routing = [SHOP_ROUTE, ...DEFAULT_ROUTING];
    const p = planPass(
      input({ poolSpecs, records, workers: twoWorkers(), routing }),
      MAX_SNAPSHOT_PROXIES,
      4,
    );
    const started = p.ownership.changes.filter((c) => c.kind === 'drain_started').map((c) => c.proxy);
    expect(started).toHaveLength(4);
    expect(started.filter((n) => n.startsWith('z-shop-'))).toHaveLength(2);
  });

  it('a report cut at its limit with only draining proxies in it: one left out is not drained yet', () => {
    // Drains the budget does not hold back (deleted proxies) may outnumber what a report carries; the
    // gateway lists its draining proxies first, so a full report of them may have cut a busy one.
    const deleted = pool(4).map((q) => ({ ...q, deletionRequestedAt: now }));
    const kept = pool(1, 0, 'kept-')[0]!;
    const poolSpecs = [...deleted, kept];
    const [a, b] = deleted.map((q) => q.name) as [string, string];
    const records = new Map([
      ...deleted.map((q) => [q.name, { ...rec(q.name, 'w1'), drainEpoch: 5 }] as const),
      [kept.name, rec(kept.name, 'w1')] as const,
    ]);
    const busy = (name: string) => ({ proxy: name, active: 1, reserved: 0 });
    const drainedWith = (counts: StoredReport['counts']) => {
      const workers = new Map([['w1', view('w1', { report: report('w1', { counts }) })]]);
      const p = planPass(input({ poolSpecs, records, workers }), MAX_SNAPSHOT_PROXIES, 2);
      return p.ownership.changes.filter((x) => x.kind === 'released' || x.next === null).map((x) => x.proxy);
    };
    // Full (two of two) and both draining: the other two, absent, may be busy.
    expect(drainedWith([busy(a), busy(b)])).toEqual([]);
    // Room left in the report, or one entry the worker keeps (listed after every draining one): absent
    // means idle.
    const others = deleted.slice(1).map((q) => q.name);
    expect(drainedWith([busy(a)]).sort()).toEqual(others);
    expect(drainedWith([busy(a), busy(kept.name)]).sort()).toEqual(others);
  });

  it('drains already under way count: a worker at its budget starts no new move until some end', () => {
    // w1 owns all twelve and the balance moves six to w2; three of those already draining, at most three
    // draining: nothing new starts.
    const poolSpecs = pool(12);
    const owned = new Map(poolSpecs.map((q) => [q.name, rec(q.name, 'w1')]));
    const free = planPass(input({ poolSpecs, records: owned, workers: twoWorkers() }));
    const moving = free.ownership.changes.filter((c) => c.kind === 'drain_started').map((c) => c.proxy);
    expect(moving).toHaveLength(6);
    const records = new Map(
      [...owned].map(([n, r]) => [n, moving.slice(0, 3).includes(n) ? { ...r, drainEpoch: 5 } : r]),
    );
    const p = planPass(input({ poolSpecs, records, workers: twoWorkers() }), MAX_SNAPSHOT_PROXIES, 3);
    expect(p.ownership.changes.filter((c) => c.kind === 'drain_started')).toEqual([]);
    expect(drainingOf(p)).toEqual(new Map([['w1', 3]]));
  });
});

describe('planPass: a pool proxy deleted and created again under its name (OwnershipRecord.uid)', () => {
  const old = proxy('p1');
  const renewed = proxy('p1'); // the same name, another uid
  const ownedBy = (r: OwnershipRecord, uid: string | undefined): OwnershipRecord => ({ ...r, uid });

  it('a proxy given out records its uid', () => {
    const p = planPass(input({ poolSpecs: [old] }));
    expect(p.ownership.changes).toEqual([
      { proxy: 'p1', kind: 'assigned', next: { ...rec('p1', 'w1'), since: 6, uid: old.uid } },
    ]);
  });

  it("the old proxy's drain starts and is never cancelled for the new one; the new one waits, in no snapshot", () => {
    const owned = new Map([['p1', ownedBy(rec('p1', 'w1'), old.uid)]]);
    // Busy with the old proxy's tunnels: not drained.
    const busy = view('w1', { report: report('w1', { counts: [{ proxy: 'p1', active: 3, reserved: 0 }] }) });
    const started = planPass(
      input({ poolSpecs: [renewed], records: owned, workers: new Map([['w1', busy]]) }),
    );
    expect(started.ownership.changes).toEqual([
      { proxy: 'p1', kind: 'drain_started', next: { ...owned.get('p1')!, drainEpoch: 6 } },
    ]);
    expect(started.builds.map((b) => [b.workerId, b.owned.map((o) => o.uid), b.draining])).toEqual([
      ['w1', [], { p1: 6 }],
    ]);
    // Before: the name was in the pool with the same owner, and the drain was cancelled at once — the old
    // proxy's tunnels kept past the drain's bound, counted against the new one.
    const draining = new Map([['p1', ownedBy(rec('p1', 'w1', 6), old.uid)]]);
    const waiting = planPass(
      input({ poolSpecs: [renewed], records: draining, workers: new Map([['w1', busy]]), epoch: 6 }),
    );
    expect(waiting.ownership.changes).toEqual([]);
    expect(leaseCandidates(input({ poolSpecs: [renewed], records: draining }))).toEqual([]);
  });

  it('once drained the record goes, and the next pass gives the new proxy out under its own uid', () => {
    const draining = new Map([['p1', ownedBy(rec('p1', 'w1', 6), old.uid)]]);
    const idle = view('w1', { report: report('w1', { epoch: 6 }) });
    const released = planPass(
      input({ poolSpecs: [renewed], records: draining, workers: new Map([['w1', idle]]), epoch: 6 }),
    );
    expect(released.ownership.changes).toEqual([{ proxy: 'p1', kind: 'released', next: null }]);
    const given = planPass(input({ poolSpecs: [renewed], workers: new Map([['w1', idle]]), epoch: 7 }));
    expect(given.ownership.changes).toEqual([
      { proxy: 'p1', kind: 'assigned', next: { ...rec('p1', 'w1'), since: 8, uid: renewed.uid } },
    ]);
  });

  it('a record stored without a uid is the proxy of its name: kept, not drained', () => {
    const legacy = new Map([['p1', rec('p1', 'w1')]]);
    const p = planPass(input({ poolSpecs: [renewed], records: legacy }));
    expect(p.ownership.changes).toEqual([]);
    expect(p.builds[0]!.owned.map((o) => o.uid)).toEqual([renewed.uid]);
  });
});
