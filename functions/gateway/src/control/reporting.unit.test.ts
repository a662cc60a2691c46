// What a runtime report carries when the gateway has more non-zero counts than the controller takes
// (limits.maxCounts): a report is a complete replacement, so whatever is cut reads as zero — for a proxy
// being drained away, as drained, and its ownership would move while its tunnels still run here.
import { describe, expect, it } from 'vitest';
import type { ProxyRuntimeCount } from '../worker.js';
import { reportedCounts } from './reporting.js';

const count = (proxy: string, draining: boolean, active = 1): ProxyRuntimeCount => ({
  proxy,
  active,
  reserved: 0,
  draining,
});

describe('reportedCounts', () => {
  it.each<[string, ProxyRuntimeCount[], number, string[]]>([
    ['under the limit: all, in order', [count('a', false), count('b', true)], 5, ['a', 'b']],
    [
      'over the limit: the draining ones are kept first',
      [count('a', false), count('b', false), count('c', true), count('d', true)],
      2,
      ['c', 'd'],
    ],
    [
      'over the limit: then the owned ones, in order',
      [count('a', false), count('b', true), count('c', false)],
      2,
      ['b', 'a'],
    ],
    ['exactly the limit: all, in order', [count('a', false), count('b', true)], 2, ['a', 'b']],
  ])('%s', (_name, all, max, expected) => {
    expect(reportedCounts(all, max).map((c) => c.proxy)).toEqual(expected);
  });

  it('caps counts at the wire schema’s 1,000,000 and leaves out the draining flag', () => {
    expect(reportedCounts([count('a', true, 5_000_000)], 1)).toEqual([
      { proxy: 'a', active: 1_000_000, reserved: 0 },
    ]);
  });
});
