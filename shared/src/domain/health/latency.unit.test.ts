import { describe, expect, it } from 'vitest';
import { shouldReportLatency } from './latency.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

describe('shouldReportLatency (seed §6)', () => {
  it.each<[string, number | null, number | null, number, number, boolean]>([
    ['first observation is always reported', null, null, 50, 0, true],
    ['inside MinReportInterval nothing is reported', 100, 0, 1000, 59, false],
    ['delta below 20 ms floor is not reported', 10, 0, 29, 61, false],
    ['delta above 20 ms floor and 50 % is reported', 10, 0, 31, 61, true],
    ['delta below 50 % of a large value is not reported', 400, 0, 590, 61, false],
    ['delta above 50 % of a large value is reported', 400, 0, 601, 61, true],
    ['a drop counts as much as a rise', 400, 0, 150, 61, true],
  ])('%s', (_n, reportedMs, reportedAtS, observed, nowS, expected) => {
    const last = { reportedMs, reportedAt: reportedAtS === null ? null : at(reportedAtS) };
    expect(shouldReportLatency(last, observed, at(nowS))).toBe(expected);
  });
});
