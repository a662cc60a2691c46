import { describe, expect, it } from 'vitest';
import {
  acceptsTraffic,
  CLOCK_SKEW_ALLOWANCE_MS,
  clockBehindMs,
  evaluateStaleness,
  grantEnded,
  grantLeftMs,
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
/** A snapshot taken at `wallMs`, generated then too (clocks agreeing, no delivery time) unless said. */
const took = (wallMs: number, validUntilMs: number, generatedAtMs = wallMs) => ({
  ...at(wallMs),
  validUntilMs,
  generatedAtMs,
});

describe('staleness', () => {
  it('refuses traffic until the first snapshot', () => {
    expect(acceptsTraffic(initialStaleness)).toBe(false);
    expect(refusalCode(evaluateStaleness(initialStaleness, at(T0), policy).phase)).toBe('no_snapshot');
  });

  const fresh = onSnapshotTaken(initialStaleness, took(T0, T0 + 3_600_000), policy);

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
    const short = onShutdown(onSnapshotTaken(initialStaleness, took(T0, T0 + 10_000), policy));
    expect(outlived(short, at(T0 + 10_000), policy)).toBe(true);
    expect(outlived(initialStaleness, at(T0 + 60_000), policy)).toBe(false);
  });

  it('goes stale at validUntil even within the age bound', () => {
    const short = onSnapshotTaken(initialStaleness, took(T0, T0 + 10_000), policy);
    expect(evaluateStaleness(short, at(T0 + 9_999), policy).phase).toBe('fresh');
    expect(evaluateStaleness(short, at(T0 + 10_000), policy).phase).toBe('stale');
  });

  it('never ages with an infinite bound, but still honours validUntil', () => {
    const inf = { maxStaleAgeMs: Number.POSITIVE_INFINITY };
    const s = onSnapshotTaken(initialStaleness, took(T0, T0 + 1e12), inf);
    expect(evaluateStaleness(s, at(T0 + 1e11), inf).phase).toBe('fresh');
    expect(evaluateStaleness(s, at(T0 + 1e12), inf).phase).toBe('stale');
  });

  it('recovers from stale when a valid snapshot arrives', () => {
    const stale = evaluateStaleness(fresh, at(T0 + 60_000), policy);
    expect(refusalCode(stale.phase)).toBe('snapshot_stale');
    const back = onSnapshotTaken(stale, took(T0 + 61_000, T0 + 3_600_000), policy);
    expect(back.phase).toBe('fresh');
    expect(acceptsTraffic(back)).toBe(true);
  });

  it('a snapshot taken already past its validUntil does not make the worker fresh', () => {
    const s = onSnapshotTaken(initialStaleness, took(T0, T0 - 1), policy);
    expect(s.phase).toBe('stale');
  });

  it('the age bound runs on the monotonic clock: a wall clock stepped back does not stretch it', () => {
    // Taken at T0; 31 s later on the monotonic clock, the wall clock was stepped back an hour (NTP).
    const later = { wallMs: T0 + 31_000 - 3_600_000, monoMs: T0 + 31_000 - MONO0 };
    expect(evaluateStaleness(fresh, later, policy).phase).toBe('stale');
  });

  it('nor does a wall clock stepped forward age a snapshot that was just taken', () => {
    const long = { maxStaleAgeMs: 150_000 };
    const s = onSnapshotTaken(initialStaleness, took(T0, T0 + 7_200_000), long);
    const later = { wallMs: T0 + 1_000 + 3_600_000, monoMs: T0 + 1_000 - MONO0 };
    expect(evaluateStaleness(s, later, long).phase).toBe('fresh');
  });

  it('validUntil holds on both clocks: a step back does not extend a grant, a step forward ends it', () => {
    const long = { maxStaleAgeMs: 1e12 };
    const s = onSnapshotTaken(initialStaleness, took(T0, T0 + 180_000), long);
    const back = { wallMs: T0 + 181_000 - 3_600_000, monoMs: T0 + 181_000 - MONO0 };
    expect(evaluateStaleness(s, back, long).phase).toBe('stale');
    const forward = { wallMs: T0 + 1_000 + 3_600_000, monoMs: T0 + 1_000 - MONO0 };
    expect(evaluateStaleness(s, forward, long).phase).toBe('stale');
  });

  it('shutting down is final', () => {
    const down: StalenessState = onShutdown(fresh);
    expect(acceptsTraffic(down)).toBe(false);
    expect(onSnapshotTaken(down, took(T0, T0 + 1e9), policy).phase).toBe('shutting_down');
    expect(evaluateStaleness(down, at(T0 + 1e9), policy)).toBe(down);
    expect(refusalCode(down.phase)).toBe('shutting_down');
  });

  it('returns the same object when nothing changes (cheap to poll)', () => {
    expect(evaluateStaleness(fresh, at(T0 + 1), policy)).toBe(fresh);
  });

  describe('grantEnded (the hard expiry, contract seed §3)', () => {
    const granted = onSnapshotTaken(initialStaleness, took(T0, T0 + 10_000), policy);

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

    // A host clock 30 s behind the controller's: the snapshot (a 180 s grant) reads as generated 30 s on.
    const takenAt = { wallMs: T0 - 30_000, monoMs: 1_000 };
    const since = (ms: number) => ({ wallMs: takenAt.wallMs + ms, monoMs: takenAt.monoMs + ms });

    it("a host clock behind the controller's does not stretch it: it ends the whole grant after the take", () => {
      const behind = { ...takenAt, validUntilMs: T0 + 180_000, generatedAtMs: T0 };
      const s = onSnapshotTaken(initialStaleness, behind, policy);
      expect(grantLeftMs(behind)).toBe(180_000);
      expect(grantEnded(s, since(179_999))).toBe(false);
      expect(grantEnded(s, since(180_000))).toBe(true);
    });

    it('a snapshot that took 20 s to arrive, on a clock that is right, keeps only what is left of it', () => {
      const late = { wallMs: T0 + 20_000, monoMs: 1_000, validUntilMs: T0 + 180_000, generatedAtMs: T0 };
      const s = onSnapshotTaken(initialStaleness, late, policy);
      expect(grantLeftMs(late)).toBe(160_000);
      expect(grantEnded(s, { wallMs: T0 + 179_999, monoMs: 160_999 })).toBe(false);
      expect(grantEnded(s, { wallMs: T0 + 180_000, monoMs: 161_000 })).toBe(true);
    });

    it.each<[string, number, number | null]>([
      ['30 s behind', 30_000, 30_000],
      ['just past the skew allowance', CLOCK_SKEW_ALLOWANCE_MS + 1, CLOCK_SKEW_ALLOWANCE_MS + 1],
      ['within the skew allowance', CLOCK_SKEW_ALLOWANCE_MS, null],
      ['right, the snapshot 2 s on its way', -2_000, null],
    ])('clockBehindMs: a host clock %s', (_n, generatedAhead, behind) => {
      const take = { ...takenAt, validUntilMs: T0 + 180_000, generatedAtMs: takenAt.wallMs + generatedAhead };
      expect(clockBehindMs(take)).toBe(behind);
    });

    it('holds for a worker shutting down, and a renewed grant ends it later', () => {
      expect(grantEnded(onShutdown(granted), at(T0 + 10_000))).toBe(true);
      const renewed = onSnapshotTaken(granted, took(T0 + 9_000, T0 + 40_000), policy);
      expect(grantEnded(renewed, at(T0 + 10_000))).toBe(false);
    });
  });
});
