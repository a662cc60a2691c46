import { describe, expect, it } from 'vitest';
import { type OwnershipRecord, ownedBy, type PlanInput, planOwnership } from './ownership.js';
import { rendezvousOwner } from './rendezvous.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = (s: number) => new Date(now.getTime() + s * 1000);
const pool = Array.from({ length: 200 }, (_, i) => `p${i}`);

function plan(over: Partial<PlanInput>) {
  return planOwnership({
    pool,
    records: new Map(),
    liveWorkers: ['w1', 'w2'],
    epoch: 1,
    drained: () => false,
    now,
    leaseMs: 60_000,
    renewBeforeMs: 30_000,
    ...over,
  });
}
const toMap = (rs: OwnershipRecord[]) => new Map(rs.map((r) => [r.proxy, r]));

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
  it('assigns every pool proxy to exactly one live worker and bumps the epoch', () => {
    const p = plan({});
    expect(p.epoch).toBe(2);
    expect(p.writes).toHaveLength(200);
    expect(new Set(p.writes.map((w) => w.owner))).toEqual(new Set(['w1', 'w2']));
  });

  it('a steady assignment writes nothing until renewal is due, and renewal does not bump the epoch', () => {
    const first = toMap(plan({}).writes);
    expect(plan({ records: first, epoch: 2, now: later(10) })).toEqual({ epoch: 2, writes: [] });
    const renew = plan({ records: first, epoch: 2, now: later(45) });
    expect(renew.epoch).toBe(2);
    expect(renew.writes).toHaveLength(200);
  });

  it('a crashed worker’s proxies move only after its lease lapses — never two owners', () => {
    const first = toMap(plan({}).writes);
    const w2s = [...first.values()].filter((r) => r.owner === 'w2').map((r) => r.proxy);
    const early = plan({ records: first, epoch: 2, liveWorkers: ['w1'], now: later(30) });
    expect(early.writes.filter((w) => w2s.includes(w.proxy))).toEqual([]);
    const lapsed = plan({ records: first, epoch: 2, liveWorkers: ['w1'], now: later(61) });
    const moved = lapsed.writes.filter((w) => w2s.includes(w.proxy));
    expect(moved).toHaveLength(w2s.length);
    expect(moved.every((w) => w.owner === 'w1')).toBe(true);
    expect(lapsed.epoch).toBe(3);
  });

  it('a proxy leaving the pool drains before its ownership clears', () => {
    const first = toMap(plan({ pool: ['p1'] }).writes);
    const owner = first.get('p1')!.owner!;
    const start = plan({ pool: [], records: first, epoch: 2, now: later(5) });
    expect(start.writes).toEqual([{ ...first.get('p1'), drainEpoch: 3 }]);
    expect(start.epoch).toBe(3);
    const draining = toMap(start.writes);
    expect(ownedBy(owner, draining.values(), later(5))).toEqual([]);
    // Still busy: nothing changes.
    expect(plan({ pool: [], records: draining, epoch: 3, now: later(6) }).writes).toEqual([]);
    // Reported at zero at epoch ≥ 3: cleared.
    const done = plan({
      pool: [],
      records: draining,
      epoch: 3,
      now: later(7),
      drained: (p, w, since) => p === 'p1' && w === owner && since === 3,
    });
    expect(done.writes).toEqual([{ proxy: 'p1', owner: null, expiresAt: null, drainEpoch: null }]);
    expect(done.epoch).toBe(4);
  });

  it('a new worker gets its share only after the old owner drained it', () => {
    const first = toMap(plan({}).writes);
    const toW3 = pool.filter((p) => rendezvousOwner(p, ['w1', 'w2', 'w3']) === 'w3');
    const start = plan({ records: first, epoch: 2, liveWorkers: ['w1', 'w2', 'w3'], now: later(1) });
    expect(start.writes.map((w) => w.proxy).sort()).toEqual([...toW3].sort());
    expect(start.writes.every((w) => w.drainEpoch === 3 && w.owner !== 'w3')).toBe(true);
    const recs = new Map([...first, ...toMap(start.writes)]);
    const done = plan({
      records: recs,
      epoch: 3,
      liveWorkers: ['w1', 'w2', 'w3'],
      now: later(2),
      drained: () => true,
    });
    expect(done.writes.filter((w) => toW3.includes(w.proxy)).every((w) => w.owner === 'w3')).toBe(true);
  });

  it('ownedBy excludes lapsed and draining records', () => {
    const recs: OwnershipRecord[] = [
      { proxy: 'a', owner: 'w1', expiresAt: later(10), drainEpoch: null },
      { proxy: 'b', owner: 'w1', expiresAt: later(-1), drainEpoch: null },
      { proxy: 'c', owner: 'w1', expiresAt: later(10), drainEpoch: 2 },
      { proxy: 'd', owner: 'w2', expiresAt: later(10), drainEpoch: null },
    ];
    expect(ownedBy('w1', recs, now).map((r) => r.proxy)).toEqual(['a']);
  });
});
