import { describe, expect, it } from 'vitest';
import { nextDrainMark, notDraining } from './drain-bound.js';

const BOUND = 300_000;

describe('nextDrainMark', () => {
  it('starts a drain at the first tick that sees it and keeps its start', () => {
    const first = nextDrainMark(notDraining, true, 1_000, BOUND);
    expect(first).toEqual({ drainingSinceMs: 1_000, cut: false, cutNow: false });
    const later = nextDrainMark(first, true, 200_000, BOUND);
    expect(later).toEqual({ drainingSinceMs: 1_000, cut: false, cutNow: false });
  });

  it('cuts once the drain has lasted the bound, and says so on that tick only', () => {
    const started = nextDrainMark(notDraining, true, 1_000, BOUND);
    const justBefore = nextDrainMark(started, true, 1_000 + BOUND - 1, BOUND);
    expect(justBefore.cut).toBe(false);
    const atBound = nextDrainMark(justBefore, true, 1_000 + BOUND, BOUND);
    expect(atBound).toEqual({ drainingSinceMs: 1_000, cut: true, cutNow: true });
    const after = nextDrainMark(atBound, true, 1_000 + BOUND + 5_000, BOUND);
    expect(after).toEqual({ drainingSinceMs: 1_000, cut: true, cutNow: false });
  });

  it('a proxy given back (drain cancelled, back in the snapshot) is neither draining nor cut', () => {
    const cut = nextDrainMark(nextDrainMark(notDraining, true, 0, BOUND), true, BOUND, BOUND);
    expect(cut.cut).toBe(true);
    const back = nextDrainMark(cut, false, BOUND + 1, BOUND);
    expect(back).toEqual({ drainingSinceMs: null, cut: false, cutNow: false });
    // Drained again later: a new drain, timed from its own start.
    const again = nextDrainMark(back, true, BOUND + 10, BOUND);
    expect(again).toEqual({ drainingSinceMs: BOUND + 10, cut: false, cutNow: false });
  });

  it('a bound of 0 never cuts (the seed: a drain waits for the counts to reach zero)', () => {
    let mark = nextDrainMark(notDraining, true, 0, 0);
    mark = nextDrainMark(mark, true, 10 * 24 * 3_600_000, 0);
    expect(mark).toEqual({ drainingSinceMs: 0, cut: false, cutNow: false });
  });
});
