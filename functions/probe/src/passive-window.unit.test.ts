import { describe, expect, it } from 'vitest';
import { emptyTally, type OutcomeTally } from '../../../shared/src/domain/workers/outcomes.js';
import type { OutcomeBatchRecord } from '../../../shared/src/ports/workers.js';
import { boundWindow, hasFailures } from './passive-window.js';

const t0 = Date.parse('2026-01-01T00:00:00Z');
const failing: OutcomeTally = { ...emptyTally(), dial: 3 };
const passing: OutcomeTally = { ...emptyTally(), ok: 3 };
/** A batch received at `sec` with a failing tally for each of `proxies` (`+name`: a passing one). */
const b = (sec: number, ...proxies: string[]): OutcomeBatchRecord => ({
  workerId: 'gw',
  sessionId: 's',
  sequence: sec,
  receivedAt: new Date(t0 + sec * 1000),
  tallies: new Map(proxies.map((p) => (p.startsWith('+') ? [p.slice(1), passing] : [p, failing]))),
});
const mayChange = (_p: string, t: OutcomeTally) => hasFailures(t);

describe('boundWindow (one passive commit stays under the cap)', () => {
  it.each<[string, OutcomeBatchRecord[], number, number]>([
    ['no batches', [], 2, 0],
    ['everything fits', [b(1, 'a'), b(2, 'b')], 2, 2],
    ['stops before the batch that would pass the cap', [b(1, 'a'), b(2, 'b'), b(3, 'c')], 2, 2],
    ['a proxy seen again costs nothing more', [b(1, 'a', 'b'), b(2, 'a', 'b'), b(3, 'c')], 2, 2],
    [
      'passing tallies of untracked proxies cannot change anything',
      [b(1, 'a'), b(2, '+x', '+y'), b(3, 'b')],
      2,
      3,
    ],
    ['the first batch is taken whatever its size', [b(1, 'a', 'b', 'c'), b(2, 'd')], 2, 1],
    ['batches of one instant are taken together …', [b(1, 'a'), b(2, 'b'), b(2, 'c')], 3, 3],
    ['… or left together', [b(1, 'a'), b(2, 'b'), b(2, 'c')], 2, 1],
  ])('%s', (_n, batches, cap, taken) => {
    expect(boundWindow(batches, mayChange, cap)).toBe(taken);
  });
});
