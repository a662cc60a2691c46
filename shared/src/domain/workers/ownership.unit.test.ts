import { describe, expect, it } from 'vitest';
import {
  applyOwnership,
  commitChunks,
  drainingFrom,
  type OwnershipChange,
  type OwnershipRecord,
  ownedBy,
  type PlanInput,
  planOwnership,
  recordsByOwner,
  type WorkerStanding,
} from './ownership.js';
import { rendezvousOwner } from './rendezvous.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const pool = Array.from({ length: 200 }, (_, i) => `p${i}`);
const live = (grantS = 60): WorkerStanding => ({ assignable: true, grantedUntil: later(grantS) });
const dead = (grantS: number): WorkerStanding => ({ assignable: false, grantedUntil: later(grantS) });
const workers = (entries: Record<string, WorkerStanding>) => new Map(Object.entries(entries));

function plan(over: Partial<PlanInput>) {
  return planOwnership({
    pool,
    records: new Map(),
    workers: workers({ w1: live(), w2: live() }),
    epoch: 1,
    blocked: () => false,
    drained: () => false,
    now,
    skewMs: 5_000,
    ...over,
  });
}
const owners = (records: Map<string, OwnershipRecord>) => [...records.values()].map((r) => r.owner);

describe('rendezvousOwner', () => {
  it('moves only the joining worker’s share when a worker joins', () => {
    const before = pool.map((p) => rendezvousOwner(p, ['w1', 'w2']));
    const after = pool.map((p) => rendezvousOwner(p, ['w1', 'w2', 'w3']));
    const moved = pool.filter((_, i) => before[i] !== after[i]);
    expect(moved.every((p) => rendezvousOwner(p, ['w1', 'w2', 'w3']) === 'w3')).toBe(true);
    expect(moved.length).toBeGreaterThan(30);
    expect(moved.length).toBeLessThan(110);
  });
  it('no workers → no owner', () => expect(rendezvousOwner('p', [])).toBeNull());
});

describe('planOwnership (contract §4)', () => {
  const first = applyOwnership(new Map(), plan({}).changes);

  it('assigns every pool proxy to exactly one live worker and bumps the epoch once', () => {
    const p = plan({});
    expect(p.epoch).toBe(2);
    expect(p.changes).toHaveLength(200);
    expect(p.changes.every((c) => c.kind === 'assigned' && c.next?.since === 2)).toBe(true);
    expect(new Set(owners(first))).toEqual(new Set(['w1', 'w2']));
  });

  it('a steady assignment changes nothing and keeps the epoch', () => {
    expect(plan({ records: first, epoch: 2, now: later(10) })).toEqual({ epoch: 2, changes: [] });
  });

  it('a crashed worker’s proxies move only after its grant (+ skew) lapses — never two owners', () => {
    const w2s = [...first.values()].filter((r) => r.owner === 'w2').map((r) => r.proxy);
    const crashed = workers({ w1: live(), w2: dead(60) });
    // Not lapsed: the proxies are marked draining (out of w2's snapshot) but keep their owner.
    const early = plan({ records: first, epoch: 2, workers: crashed, now: later(30) });
    expect(early.changes.filter((c) => w2s.includes(c.proxy)).every((c) => c.kind === 'drain_started')).toBe(
      true,
    );
    const marked = applyOwnership(first, early.changes);
    expect(plan({ records: marked, epoch: 3, workers: crashed, now: later(64) }).changes).toEqual([]);
    const lapsed = plan({ records: marked, epoch: 3, workers: crashed, now: later(65) });
    expect(lapsed.changes).toHaveLength(w2s.length);
    expect(lapsed.changes.every((c) => c.kind === 'released' && c.next?.owner === 'w1')).toBe(true);
    expect(lapsed.epoch).toBe(4);
  });

  it('a worker that was never sent a snapshot holds nothing: its records move at once', () => {
    const never = workers({ w1: live(), w2: { assignable: false, grantedUntil: null } });
    const p = plan({ records: first, epoch: 2, workers: never });
    const w2s = [...first.values()].filter((r) => r.owner === 'w2').map((r) => r.proxy);
    expect(w2s.length).toBeGreaterThan(0);
    expect(p.changes.map((c) => c.proxy).sort()).toEqual([...w2s].sort());
    expect(p.changes.every((c) => c.kind === 'released' && c.next?.owner === 'w1')).toBe(true);
  });

  it('a proxy leaving the pool drains before its ownership clears', () => {
    const one = applyOwnership(new Map(), plan({ pool: ['p1'] }).changes);
    const owner = one.get('p1')!.owner;
    const start = plan({ pool: [], records: one, epoch: 2, now: later(5) });
    expect(start).toEqual({
      epoch: 3,
      changes: [{ proxy: 'p1', kind: 'drain_started', next: { ...one.get('p1')!, drainEpoch: 3 } }],
    });
    const draining = applyOwnership(one, start.changes);
    expect(ownedBy(owner, draining.values())).toEqual([]);
    expect(drainingFrom(owner, draining.values())).toEqual(new Map([['p1', 3]]));
    // Still busy: nothing changes.
    expect(plan({ pool: [], records: draining, epoch: 3, now: later(6) }).changes).toEqual([]);
    // Reported at zero at epoch ≥ 3: cleared.
    const done = plan({
      pool: [],
      records: draining,
      epoch: 3,
      now: later(7),
      drained: (p, w, since) => p === 'p1' && w === owner && since === 3,
    });
    expect(done).toEqual({ epoch: 4, changes: [{ proxy: 'p1', kind: 'released', next: null }] });
  });

  it('back in the pool before the drain finished: the drain is cancelled', () => {
    const one = applyOwnership(new Map(), plan({ pool: ['p1'] }).changes);
    const draining = applyOwnership(one, plan({ pool: [], records: one, epoch: 2 }).changes);
    const back = plan({ pool: ['p1'], records: draining, epoch: 3 });
    expect(back.changes).toEqual([
      { proxy: 'p1', kind: 'drain_cancelled', next: { ...one.get('p1')!, drainEpoch: null } },
    ]);
  });

  it('a new worker gets its share only after the old owner drained it', () => {
    const three = workers({ w1: live(), w2: live(), w3: live() });
    const toW3 = pool.filter((p) => rendezvousOwner(p, ['w1', 'w2', 'w3']) === 'w3');
    const start = plan({ records: first, epoch: 2, workers: three, now: later(1) });
    expect(start.changes.map((c) => c.proxy).sort()).toEqual([...toW3].sort());
    expect(start.changes.every((c) => c.kind === 'drain_started' && c.next?.owner !== 'w3')).toBe(true);
    const recs = applyOwnership(first, start.changes);
    const done = plan({ records: recs, epoch: 3, workers: three, now: later(2), drained: () => true });
    expect(done.changes.every((c) => toW3.includes(c.proxy) && c.next?.owner === 'w3')).toBe(true);
    expect(done.changes).toHaveLength(toW3.length);
  });

  it('a worker shutting down (draining) is live but not assignable: its proxies drain to the others', () => {
    const shutting = workers({ w1: live(), w2: { ...live(), assignable: false } });
    const p = plan({ records: first, epoch: 2, workers: shutting });
    const w2s = [...first.values()].filter((r) => r.owner === 'w2').map((r) => r.proxy);
    expect(w2s.length).toBeGreaterThan(0);
    expect(p.changes.map((c) => c.proxy).sort()).toEqual([...w2s].sort());
    expect(p.changes.every((c) => c.kind === 'drain_started' && c.next?.owner === 'w2')).toBe(true);
    const recs = applyOwnership(first, p.changes);
    const handed = plan({ records: recs, epoch: 3, workers: shutting, drained: () => true });
    expect(handed.changes.map((c) => c.proxy).sort()).toEqual([...w2s].sort());
    expect(handed.changes.every((c) => c.next?.owner === 'w1')).toBe(true);
  });

  it('an unowned proxy with active leases is not assigned until they end', () => {
    const p = plan({ pool: ['p1', 'p2'], blocked: (x) => x === 'p1' });
    expect(p.changes.map((c) => c.proxy)).toEqual(['p2']);
  });

  it('no assignable worker: nothing is assigned, and owned proxies wait for their owner', () => {
    expect(plan({ workers: new Map() })).toEqual({ epoch: 1, changes: [] });
  });
});

describe('commitChunks', () => {
  const change = (proxy: string, kind: OwnershipChange['kind']): OwnershipChange => ({
    proxy,
    kind,
    next: kind === 'released' ? null : { proxy, owner: 'w1', since: 2, drainEpoch: null },
  });

  it('keeps every commit within the assignment bound, in order, losing nothing', () => {
    const changes = plan({}).changes; // 200 assignments
    const chunks = commitChunks(changes, 64);
    expect(chunks.map((c) => c.length)).toEqual([64, 64, 64, 8]);
    expect(chunks.flat()).toEqual(changes);
  });

  it('does not count the changes that claim nothing', () => {
    const changes = [
      change('a', 'released'),
      change('b', 'assigned'),
      change('c', 'drain_started'),
      change('d', 'assigned'),
      change('e', 'drain_cancelled'),
      change('f', 'assigned'),
    ];
    expect(commitChunks(changes, 2).map((c) => c.map((x) => x.proxy))).toEqual([
      ['a', 'b', 'c', 'd', 'e'],
      ['f'],
    ]);
  });

  // A mass drain (workers scaled out, or lost at once) or release claims nothing, but each record is bytes
  // of the commit request: 48,000 in one commit were 11 MiB, over Firestore's 10 MiB, on every pass.
  it('bounds the changes of every kind in one commit too', () => {
    const changes = [
      ...Array.from({ length: 25_000 }, (_, i) => change(`d${i}`, 'drain_started')),
      change('x', 'assigned'),
    ];
    const chunks = commitChunks(changes, 400);
    expect(chunks.map((c) => c.length)).toEqual([10_000, 10_000, 5_001]);
    expect(chunks.flat()).toEqual(changes);
    expect(commitChunks(changes.slice(0, 5), 400, 2).map((c) => c.length)).toEqual([2, 2, 1]);
  });

  it.each([[[]], [[change('a', 'released')]]])('one commit (or none) below the bound', (changes) => {
    expect(commitChunks(changes, 1)).toEqual(changes.length ? [changes] : []);
  });
});

describe('recordsByOwner', () => {
  it('groups the records by owner, each group in the records’ order', () => {
    const r = (proxy: string, owner: string, drainEpoch: number | null = null): OwnershipRecord => ({
      proxy,
      owner,
      since: 1,
      drainEpoch,
    });
    const records = [r('a', 'w2'), r('b', 'w1'), r('c', 'w2', 4), r('d', 'w1')];
    expect(recordsByOwner(records)).toEqual(
      new Map([
        ['w2', [r('a', 'w2'), r('c', 'w2', 4)]],
        ['w1', [r('b', 'w1'), r('d', 'w1')]],
      ]),
    );
    expect(recordsByOwner([])).toEqual(new Map());
  });
});
