import { describe, expect, it } from 'vitest';
import { provisionedSince } from '../../testing/healthy-conditions.js';
import { aProxy, externalSpec } from '../../testing/proxy-fixtures.js';
import {
  awaitsPass,
  awaitsPassNotBefore,
  awaitsPassSince,
  awaitsPassSlotDue,
  driftNotBefore,
  driftOffsetMs,
  driftSlots,
  isDriftPolled,
} from './drift.js';

const t0 = new Date('2026-03-01T00:00:00Z');
const at = (ms: number) => new Date(t0.getTime() + ms);
const steady = { phase: 'Provisioned' as const, providerId: 'zones/z/instances/i', nextReconcileAt: null };

describe('drift polling', () => {
  it('gives each uid exactly one slot per period, and consecutive windows partition time', () => {
    const uid = '00000000-0000-4000-8000-000000000042';
    const period = 60_000;
    const slots = [
      ...driftSlots(uid, period, at(0), at(60_000)),
      ...driftSlots(uid, period, at(60_000), at(150_000)),
    ];
    expect(slots.map((d) => d.getTime() - t0.getTime())).toEqual(
      [0, 1, 2].map((k) => k * period + driftOffsetMs(uid, period)).filter((ms) => ms < 150_000),
    );
    for (const s of slots) expect((s.getTime() - driftOffsetMs(uid, period)) % period).toBe(0);
  });

  it('spreads a fleet over the period', () => {
    const offsets = Array.from({ length: 1000 }, (_, i) =>
      driftOffsetMs(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, 60_000),
    );
    const buckets = new Array(6).fill(0);
    for (const o of offsets) buckets[Math.floor(o / 10_000)]++;
    for (const b of buckets) expect(b).toBeGreaterThan(100);
  });

  it.each([
    ['running managed proxy', aProxy({ status: steady }), true],
    ['something scheduled', aProxy({ status: { ...steady, nextReconcileAt: t0 } }), false],
    ['being deleted', aProxy({ deletionRequestedAt: t0, status: steady }), false],
    ['failed', aProxy({ status: { ...steady, phase: 'Failed' } }), false],
    ['ready', aProxy({ status: { ...steady, phase: 'Ready' } }), true],
  ])('%s → %s', (_l, p, expected) => {
    expect(isDriftPolled(p)).toBe(expected);
  });

  const seen = { ...steady, phase: 'Ready' as const, observedGeneration: 1 };
  it.each([
    ['never reconciled (new)', aProxy(), true],
    ['deletion requested, no pass since', aProxy({ deletionRequestedAt: t0, status: seen }), true],
    ['spec edited, no pass since', aProxy({ generation: 2, status: seen }), true],
    ['edited while latched', aProxy({ generation: 2, status: { ...seen, phase: 'Failed' } }), true],
    ['up to date', aProxy({ status: seen }), false],
    ['latched failure', aProxy({ status: { ...seen, phase: 'Failed' } }), false],
    ['something scheduled', aProxy({ generation: 2, status: { ...seen, nextReconcileAt: t0 } }), false],
    [
      'deletion in hand (latched: provider missing)',
      aProxy({ deletionRequestedAt: t0, status: { ...seen, phase: 'Deleting' } }),
      false,
    ],
  ])('awaits a pass: %s → %s', (_l, p, expected) => {
    expect(awaitsPass(p)).toBe(expected);
  });

  it.each([
    [0, false],
    [1, true],
    [2, true],
    [3, false],
    [4, true],
    [7, false],
    [8, true],
    [15, false],
    [16, true],
    [24, false],
    [32, true],
    [48, true],
  ])('republishes an awaiting proxy %i DriftPolls after its request: %s', (n, expected) => {
    const D = 60_000;
    expect(awaitsPassSlotDue(t0, at(n * D + 1_234), D)).toBe(expected);
  });

  // An edit records no time of its own: counted from the creation, a proxy weeks old whose edit's request
  // was lost was asked again every 16th DriftPoll only, its leases handing out the old host meanwhile.
  it('republishes a spec edit awaiting its pass at its next slot, however old the proxy', () => {
    const D = 60_000;
    const p = aProxy({
      spec: externalSpec(),
      createdAt: at(-100 * D),
      generation: 2,
      status: { ...seen, providerId: null },
    });
    expect(awaitsPass(p)).toBe(true);
    const [next] = driftSlots(p.uid, D, t0, at(D), awaitsPassNotBefore(p, D));
    const since = awaitsPassSince(p);
    expect(next).toBeDefined();
    expect(since === null || awaitsPassSlotDue(since, next!, D)).toBe(true);
    // A creation or deletion no pass has seen keeps its backoff (its passes may be failing on a provider).
    const created = aProxy({ createdAt: at(-100 * D) });
    expect(awaitsPassSince(created)).toEqual(at(-100 * D));
    expect(awaitsPassSince(aProxy({ deletionRequestedAt: t0, status: seen }))).toEqual(t0);
  });

  it('gives the request a DriftPoll to land before stepping in', () => {
    const created = aProxy({ createdAt: at(5_000) });
    expect(awaitsPassNotBefore(created, 60_000)).toEqual(at(65_000));
    const deleting = aProxy({ createdAt: at(0), deletionRequestedAt: at(90_000) });
    expect(awaitsPassNotBefore(deleting, 60_000)).toEqual(at(150_000));
  });

  it('waits a whole DriftPoll after the instance was seen Running (seed: RequeueAfter DriftPoll)', () => {
    const uid = '00000000-0000-4000-8000-000000000042';
    const since = at(10_000);
    const p = aProxy({
      uid,
      status: {
        ...steady,
        conditions: [provisionedSince(since)],
      },
    });
    const notBefore = driftNotBefore(p, 60_000)!;
    expect(notBefore).toEqual(at(70_000));
    const slots = driftSlots(uid, 60_000, at(0), at(180_000), notBefore);
    expect(slots.every((s) => s >= notBefore)).toBe(true);
    expect(slots.length).toBeGreaterThanOrEqual(1);
    expect(driftNotBefore(aProxy({ status: steady }), 60_000)).toBeNull();
  });
});
