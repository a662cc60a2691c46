import { describe, expect, it } from 'vitest';
import {
  acceptsTraffic,
  evaluateStaleness,
  initialStaleness,
  onShutdown,
  onSnapshotTaken,
  refusalCode,
  type StalenessState,
} from './staleness.js';

const policy = { maxStaleAgeMs: 30_000 };
const T0 = Date.UTC(2026, 0, 1);

describe('staleness', () => {
  it('refuses traffic until the first snapshot', () => {
    expect(acceptsTraffic(initialStaleness)).toBe(false);
    expect(refusalCode(evaluateStaleness(initialStaleness, T0, policy).phase)).toBe('no_snapshot');
  });

  const fresh = onSnapshotTaken(initialStaleness, { nowMs: T0, validUntilMs: T0 + 3_600_000 }, policy);

  it.each([
    ['just taken', 0, 'fresh'],
    ['at the age bound', 30_000, 'fresh'],
    ['past the age bound', 30_001, 'stale'],
  ])('%s → %s', (_label, elapsed, phase) => {
    expect(evaluateStaleness(fresh, T0 + elapsed, policy).phase).toBe(phase);
  });

  it('goes stale at validUntil even within the age bound', () => {
    const short = onSnapshotTaken(initialStaleness, { nowMs: T0, validUntilMs: T0 + 10_000 }, policy);
    expect(evaluateStaleness(short, T0 + 9_999, policy).phase).toBe('fresh');
    expect(evaluateStaleness(short, T0 + 10_000, policy).phase).toBe('stale');
  });

  it('never ages with an infinite bound, but still honours validUntil', () => {
    const inf = { maxStaleAgeMs: Number.POSITIVE_INFINITY };
    const s = onSnapshotTaken(initialStaleness, { nowMs: T0, validUntilMs: T0 + 1e12 }, inf);
    expect(evaluateStaleness(s, T0 + 1e11, inf).phase).toBe('fresh');
    expect(evaluateStaleness(s, T0 + 1e12, inf).phase).toBe('stale');
  });

  it('recovers from stale when a valid snapshot arrives', () => {
    const stale = evaluateStaleness(fresh, T0 + 60_000, policy);
    expect(refusalCode(stale.phase)).toBe('snapshot_stale');
    const back = onSnapshotTaken(stale, { nowMs: T0 + 61_000, validUntilMs: T0 + 3_600_000 }, policy);
    expect(back.phase).toBe('fresh');
    expect(acceptsTraffic(back)).toBe(true);
  });

  it('a snapshot taken already past its validUntil does not make the worker fresh', () => {
    const s = onSnapshotTaken(initialStaleness, { nowMs: T0, validUntilMs: T0 - 1 }, policy);
    expect(s.phase).toBe('stale');
  });

  it('shutting down is final', () => {
    const down: StalenessState = onShutdown(fresh);
    expect(acceptsTraffic(down)).toBe(false);
    expect(onSnapshotTaken(down, { nowMs: T0, validUntilMs: T0 + 1e9 }, policy).phase).toBe('shutting_down');
    expect(evaluateStaleness(down, T0 + 1e9, policy)).toBe(down);
    expect(refusalCode(down.phase)).toBe('shutting_down');
  });

  it('returns the same object when nothing changes (cheap to poll)', () => {
    expect(evaluateStaleness(fresh, T0 + 1, policy)).toBe(fresh);
  });
});
