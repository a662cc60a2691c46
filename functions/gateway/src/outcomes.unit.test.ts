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
    expect([1, 2, 3, 4].map((n) => q.push(o(n)))).toEqual([true, true, true, false]);
    expect(q.dropped).toBe(1);
    expect(q.take(2).map((x) => x.latencyMs)).toEqual([1, 2]);
    q.push(o(5));
    q.push(o(6));
    expect(q.push(o(7))).toBe(false);
    expect(q.take(10).map((x) => x.latencyMs)).toEqual([3, 5, 6]);
    expect(q.size).toBe(0);
    expect(q.dropped).toBe(2);
  });
});
