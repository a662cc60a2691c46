import { describe, expect, it } from 'vitest';
import {
  acceptsTraffic,
  evaluateStaleness,
  grantEnded,
  initialStaleness,
  onShutdown,
  onSnapshotTaken,
  outlived,
  refusalCode,
  type StalenessState,
} from './staleness.js';

const policy = { maxStaleAgeMs: 30_000 };
const T0 = Date.UTC(2026, 0, 1);
/** Both clocks agreeing (no step): the monotonic one counts from the process start, an hour before T0. */
const MONO0 = T0 - 3_600_000;
const at = (wallMs: number) => ({ wallMs, monoMs: wallMs - MONO0 });

describe('staleness', () => {
  it('refuses traffic until the first snapshot', () => {
    expect(acceptsTraffic(initialStaleness)).toBe(false);
    expect(refusalCode(evaluateStaleness(initialStaleness, at(T0), policy).phase)).toBe('no_snapshot');
  });

  const fresh = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 3_600_000 }, policy);

  it.each([
    ['just taken', 0, 'fresh'],
    ['at the age bound', 30_000, 'fresh'],
    ['past the age bound', 30_001, 'stale'],
  ])('%s → %s', (_label, elapsed, phase) => {
    expect(evaluateStaleness(fresh, at(T0 + elapsed), policy).phase).toBe(phase);
  });

  it('a snapshot outlives its age or grant whatever the phase: a shutdown does not make it fresh', () => {
    const down = onShutdown(fresh);
    expect(outlived(down, at(T0 + 30_000), policy)).toBe(false);
    expect(outlived(down, at(T0 + 30_001), policy)).toBe(true);
    const short = onShutdown(
      onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 10_000 }, policy),
    );
    expect(outlived(short, at(T0 + 10_000), policy)).toBe(true);
    expect(outlived(initialStaleness, at(T0 + 60_000), policy)).toBe(false);
  });

  it('goes stale at validUntil even within the age bound', () => {
    const short = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 10_000 }, policy);
    expect(evaluateStaleness(short, at(T0 + 9_999), policy).phase).toBe('fresh');
    expect(evaluateStaleness(short, at(T0 + 10_000), policy).phase).toBe('stale');
  });

  it('never ages with an infinite bound, but still honours validUntil', () => {
    const inf = { maxStaleAgeMs: Number.POSITIVE_INFINITY };
    const s = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 1e12 }, inf);
    expect(evaluateStaleness(s, at(T0 + 1e11), inf).phase).toBe('fresh');
    expect(evaluateStaleness(s, at(T0 + 1e12), inf).phase).toBe('stale');
  });

  it('recovers from stale when a valid snapshot arrives', () => {
    const stale = evaluateStaleness(fresh, at(T0 + 60_000), policy);
    expect(refusalCode(stale.phase)).toBe('snapshot_stale');
    const back = onSnapshotTaken(stale, { ...at(T0 + 61_000), validUntilMs: T0 + 3_600_000 }, policy);
    expect(back.phase).toBe('fresh');
    expect(acceptsTraffic(back)).toBe(true);
  });

  it('a snapshot taken already past its validUntil does not make the worker fresh', () => {
    const s = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 - 1 }, policy);
    expect(s.phase).toBe('stale');
  });

  it('the age bound runs on the monotonic clock: a wall clock stepped back does not stretch it', () => {
    // Taken at T0; 31 s later on the monotonic clock, the wall clock was stepped back an hour (NTP).
    const later = { wallMs: T0 + 31_000 - 3_600_000, monoMs: T0 + 31_000 - MONO0 };
    expect(evaluateStaleness(fresh, later, policy).phase).toBe('stale');
  });

  it('nor does a wall clock stepped forward age a snapshot that was just taken', () => {
    const long = { maxStaleAgeMs: 150_000 };
    const s = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 7_200_000 }, long);
    const later = { wallMs: T0 + 1_000 + 3_600_000, monoMs: T0 + 1_000 - MONO0 };
    expect(evaluateStaleness(s, later, long).phase).toBe('fresh');
  });

  it('validUntil holds on both clocks: a step back does not extend a grant, a step forward ends it', () => {
    const long = { maxStaleAgeMs: 1e12 };
    const s = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 180_000 }, long);
    const back = { wallMs: T0 + 181_000 - 3_600_000, monoMs: T0 + 181_000 - MONO0 };
    expect(evaluateStaleness(s, back, long).phase).toBe('stale');
    const forward = { wallMs: T0 + 1_000 + 3_600_000, monoMs: T0 + 1_000 - MONO0 };
    expect(evaluateStaleness(s, forward, long).phase).toBe('stale');
  });

  it('shutting down is final', () => {
    const down: StalenessState = onShutdown(fresh);
    expect(acceptsTraffic(down)).toBe(false);
    expect(onSnapshotTaken(down, { ...at(T0), validUntilMs: T0 + 1e9 }, policy).phase).toBe('shutting_down');
    expect(evaluateStaleness(down, at(T0 + 1e9), policy)).toBe(down);
    expect(refusalCode(down.phase)).toBe('shutting_down');
  });

  it('returns the same object when nothing changes (cheap to poll)', () => {
    expect(evaluateStaleness(fresh, at(T0 + 1), policy)).toBe(fresh);
  });

  describe('grantEnded (the hard expiry, contract seed §3)', () => {
    const granted = onSnapshotTaken(initialStaleness, { ...at(T0), validUntilMs: T0 + 10_000 }, policy);

    it('is false before any snapshot and until validUntil, true from it', () => {
      expect(grantEnded(initialStaleness, at(T0))).toBe(false);
      expect(grantEnded(granted, at(T0 + 9_999))).toBe(false);
      expect(grantEnded(granted, at(T0 + 10_000))).toBe(true);
    });

    it('is not moved by the age bound: a worker stale by age still holds its grant', () => {
      const aged = evaluateStaleness(granted, at(T0 + 5_000), { maxStaleAgeMs: 1_000 });
      expect(aged.phase).toBe('stale');
      expect(grantEnded(aged, at(T0 + 5_000))).toBe(false);
    });

    it('ends on whichever clock reaches it first: a wall clock stepped back does not stretch it', () => {
      expect(grantEnded(granted, { wallMs: T0 - 60_000, monoMs: T0 + 10_000 - MONO0 })).toBe(true);
      expect(grantEnded(granted, { wallMs: T0 + 10_000, monoMs: T0 - MONO0 })).toBe(true);
    });

    it('holds for a worker shutting down, and a renewed grant ends it later', () => {
      expect(grantEnded(onShutdown(granted), at(T0 + 10_000))).toBe(true);
      const renewed = onSnapshotTaken(granted, { ...at(T0 + 9_000), validUntilMs: T0 + 40_000 }, policy);
      expect(grantEnded(renewed, at(T0 + 10_000))).toBe(false);
    });
  });
});
