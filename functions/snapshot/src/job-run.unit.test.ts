import { describe, expect, it } from 'vitest';
import { snapshotRunResult } from './job-run.js';
import type { PassSummary } from './pass.js';

const summary = (over: Partial<PassSummary> = {}): PassSummary => ({
  ran: true,
  busy: false,
  epoch: 3,
  ownershipChanges: 1,
  published: 2,
  resent: 1,
  failures: 0,
  failed: [],
  swept: 4,
  sweepFailures: 1,
  retired: 6,
  retireFailures: 2,
  workers: [],
  ...over,
});

describe('snapshotRunResult', () => {
  it.each([
    [
      'a pass that ran',
      { outcome: 'done' as const, summary: summary() },
      {
        ok: true,
        counts: {
          passes: 1,
          ownershipChanges: 1,
          published: 2,
          resent: 1,
          failures: 0,
          swept: 4,
          sweepFailures: 1,
          retired: 6,
          retireFailures: 2,
          workers: 0,
        },
        error: null,
      },
    ],
    [
      'nothing to do',
      {
        outcome: 'done' as const,
        summary: summary({ ran: false, ownershipChanges: 0, published: 0, resent: 0 }),
      },
      {
        ok: true,
        counts: {
          passes: 0,
          ownershipChanges: 0,
          published: 0,
          resent: 0,
          failures: 0,
          swept: 4,
          sweepFailures: 1,
          retired: 6,
          retireFailures: 2,
          workers: 0,
        },
        error: null,
      },
    ],
    [
      'failed steps',
      { outcome: 'done' as const, summary: summary({ failures: 2 }) },
      expect.objectContaining({ ok: false, error: '2 worker snapshot step(s) failed' }),
    ],
    [
      'busy or failed tick',
      { outcome: 'busy_tick' as const },
      expect.objectContaining({ ok: false, counts: {} }),
    ],
    [
      'busy or failed tick: the upkeep it still ran is counted',
      {
        outcome: 'busy_tick' as const,
        upkeep: { swept: 1, sweepFailures: 0, retired: 2, retireFailures: 3 },
      },
      expect.objectContaining({
        ok: false,
        counts: { swept: 1, sweepFailures: 0, retired: 2, retireFailures: 3 },
      }),
    ],
  ])('%s', (_, outcome, expected) => {
    expect(snapshotRunResult(outcome)).toEqual(expected);
  });
});
