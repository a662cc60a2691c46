import { describe, expect, it } from 'vitest';
import { type Outcome, OutcomeQueue } from './outcomes.js';

const o = (n: number): Outcome => ({
  proxy: `p${n}`,
  route: 'r',
  stage: 'TUNNEL',
  ok: true,
  latencyMs: n,
  target: 't:1',
  at: n,
});

describe('OutcomeQueue', () => {
  it('keeps order across wrap-around and drops (counting) when full', () => {
    const q = new OutcomeQueue(3);
    expect([1, 2, 3, 4].map((n) => q.push(o(n), 0))).toEqual([true, true, true, false]);
    expect(q.dropped).toBe(1);
    expect(q.take(2, 0).map((x) => x.latencyMs)).toEqual([1, 2]);
    q.push(o(5), 0);
    q.push(o(6), 0);
    expect(q.push(o(7), 0)).toBe(false);
    expect(q.take(10, 0).map((x) => x.latencyMs)).toEqual([3, 5, 6]);
    expect(q.size).toBe(0);
    expect(q.dropped).toBe(2);
  });
});

describe('OutcomeQueue when full: low-value samples go first (contract seed §5)', () => {
  const sample = (n: number, ok: boolean): Outcome => ({ ...o(n), ok, stage: ok ? 'TUNNEL' : 'DIAL' });
  const s = (n: number) => sample(n, true);
  const f = (n: number) => sample(n, false);
  const label = (x: Outcome) => `${x.ok ? 's' : 'f'}${x.latencyMs}`;

  it.each<[string, Outcome[], Outcome, boolean, string[]]>([
    ['a failure displaces the oldest success', [s(1), s(2), s(3)], f(4), false, ['s2', 's3', 'f4']],
    [
      'a failure displaces the oldest success among failures',
      [f(1), s(2), s(3)],
      f(4),
      false,
      ['f1', 's3', 'f4'],
    ],
    ['a success is dropped', [f(1), s(2), f(3)], s(4), false, ['f1', 's2', 'f3']],
    [
      'a failure is dropped when only failures are queued',
      [f(1), f(2), f(3)],
      f(4),
      false,
      ['f1', 'f2', 'f3'],
    ],
  ])('%s', (_name, queued, incoming, accepted, kept) => {
    const q = new OutcomeQueue(3);
    for (const x of queued) expect(q.push(x, 0)).toBe(true);
    expect(q.push(incoming, 0)).toBe(accepted);
    expect(q.dropped).toBe(1);
    expect(q.size).toBe(3);
    expect(q.take(10, 0).map(label)).toEqual(kept);
  });

  it('keeps arrival order across both kinds, wrap-around and repeated displacement', () => {
    const q = new OutcomeQueue(4);
    for (const x of [s(1), f(2), s(3), s(4)]) q.push(x, 0);
    expect(q.take(1, 0).map(label)).toEqual(['s1']);
    q.push(f(5), 0);
    q.push(f(6), 0); // displaces s3
    q.push(f(7), 0); // displaces s4
    q.push(s(8), 0); // dropped
    q.push(f(9), 0); // dropped: nothing but failures left
    expect(q.dropped).toBe(4);
    expect(q.take(10, 0).map(label)).toEqual(['f2', 'f5', 'f6', 'f7']);
    q.push(s(10), 0);
    q.push(f(11), 0);
    expect(q.take(10, 0).map(label)).toEqual(['s10', 'f11']);
  });
});

describe('OutcomeQueue ages', () => {
  it('takes each outcome with its age on the monotonic clock it was queued by, whatever its `at`', () => {
    const q = new OutcomeQueue(3);
    q.push({ ...o(1), at: 5_000_000 }, 100); // `at`, the wall clock's, says nothing of the age
    q.push({ ...o(2), ok: false }, 250);
    q.push(o(3), 900);
    q.push({ ...o(4), ok: false }, 1_000); // displaces the oldest success: its time goes with it
    expect(q.take(10, 1_500).map((x) => [x.latencyMs, x.ageMs])).toEqual([
      [2, 1_250],
      [3, 600],
      [4, 500],
    ]);
  });
});
