import { describe, expect, it } from 'vitest';
import { hashFraction, isDueInWindow, nextSlotAfter } from './due.js';

const t0 = new Date('2026-01-01T00:00:00Z').getTime();
const d = (ms: number) => new Date(t0 + ms);

describe('isDueInWindow', () => {
  it('is due exactly once per interval over consecutive windows, whatever the window size', () => {
    for (const windowMs of [700, 1000, 2000, 7000]) {
      let count = 0;
      for (let from = 0; from < 600_000; from += windowMs) {
        if (isDueInWindow('uid-a', 30_000, d(from), d(from + windowMs))) count++;
      }
      expect(count).toBe(20);
    }
  });

  it('spreads first probes across the interval (jitter from the uid)', () => {
    const phases = Array.from({ length: 200 }, (_, i) => hashFraction(`uid-${i}`));
    const early = phases.filter((p) => p < 0.5).length;
    expect(early).toBeGreaterThan(60);
    expect(early).toBeLessThan(140);
  });

  it('an interval of zero means always due', () => {
    expect(isDueInWindow('x', 0, d(0), d(1))).toBe(true);
  });

  it('an empty window is never due', () => {
    expect(isDueInWindow('x', 1000, d(5000), d(5000))).toBe(false);
  });

  it('nextSlotAfter is the boundary that makes the proxy due', () => {
    const next = nextSlotAfter('uid-b', 30_000, d(12_345));
    expect(next.getTime()).toBeGreaterThan(t0 + 12_345);
    expect(isDueInWindow('uid-b', 30_000, new Date(next.getTime() - 1), next)).toBe(true);
    expect(isDueInWindow('uid-b', 30_000, d(12_345), new Date(next.getTime() - 1))).toBe(false);
  });
});
