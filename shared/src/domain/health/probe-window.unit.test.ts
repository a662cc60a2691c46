import { describe, expect, it } from 'vitest';
import { firstWindowStart, MaxLookBackTicks, type PreviousProbeRun } from './probe-window.js';

// Deployed: a 60 s tick that keeps probing for 50 s.
const cfg = { tickPeriodMs: 60_000, loopMs: 50_000 };
const t0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const sec = (s: number) => new Date(t0 + s * 1000);

const ok = (startedAt: number): PreviousProbeRun => ({
  startedAt: sec(startedAt),
  ok: true,
  windowStart: null,
});
const failed = (startedAt: number, windowStart?: number): PreviousProbeRun => ({
  startedAt: sec(startedAt),
  ok: false,
  windowStart: windowStart === undefined ? null : sec(windowStart),
});
const running = (startedAt: number): PreviousProbeRun => ({
  startedAt: sec(startedAt),
  ok: null,
  windowStart: null,
});

describe('firstWindowStart', () => {
  it('first run ever: one tick period back', () => {
    expect(firstWindowStart(null, sec(0), cfg)).toEqual(sec(-60));
  });

  it('after a run that finished: at its deadline, where its coverage ended', () => {
    expect(firstWindowStart(ok(0), sec(60), cfg)).toEqual(sec(50));
    // A deadline ahead (loop longer than the tick) had no slot left before it, but proxies created since do.
    expect(firstWindowStart(ok(0), sec(60), { ...cfg, loopMs: 90_000 })).toEqual(sec(60));
  });

  it('after a run that finished with its budget spent before its deadline: where the slots it left start', () => {
    expect(firstWindowStart({ ...ok(-60), nextWindowStart: sec(-30) }, sec(0), cfg)).toEqual(sec(-30));
  });

  it('after a run that failed after a finished one: where the failed run’s window started (the deadline before it)', () => {
    // Run 0 finished (deadline 50); run 60 started its window at 50 and failed. Its start (60) would leave
    // the slots in (50, 60] to their next slot, one interval late.
    expect(firstWindowStart(failed(60, 50), sec(120), cfg)).toEqual(sec(50));
    // One pass per tick (loop 0): the failed run's window started at the start of the run before it.
    expect(firstWindowStart(failed(60, 0), sec(120), { ...cfg, loopMs: 0 })).toEqual(sec(0));
  });

  it('after two failed runs in a row: where the first of them started its window', () => {
    // Run 0 finished (deadline 50), runs 60 and 120 failed; 120 took over 60's window start.
    expect(firstWindowStart(failed(60, 50), sec(120), cfg)).toEqual(sec(50));
    expect(firstWindowStart(failed(120, 50), sec(180), cfg)).toEqual(sec(50));
  });

  it('after a failed run that recorded no window (a record from before it was recorded): one tick before its start', () => {
    expect(firstWindowStart(failed(60), sec(120), cfg)).toEqual(sec(0));
  });

  it('a failed run’s window start ahead of now (it waited for a run still looping): now', () => {
    expect(firstWindowStart(failed(60, 130), sec(120), cfg)).toEqual(sec(120));
  });

  it('after a run still recorded as running: at its deadline, even when that is ahead', () => {
    expect(firstWindowStart(running(0), sec(60), cfg)).toEqual(sec(50));
    expect(firstWindowStart(running(30), sec(60), cfg)).toEqual(sec(80));
  });

  it('after a run killed without recording its end: as if still running — from its deadline', () => {
    // Indistinguishable from a running one: the slots of its lost pass wait for their next slot.
    expect(firstWindowStart(running(0), sec(120), cfg)).toEqual(sec(50));
  });

  it('the previous run’s deadline as its record holds it, not from this deployment’s loop', () => {
    // It looped 50 s; this deployment loops 0 (PROBE_LOOP_SECONDS changed between the two runs): from 0
    // the slots in (0, 50], which it probed, would be probed and counted again.
    expect(firstWindowStart({ ...ok(0), deadline: sec(50) }, sec(60), { ...cfg, loopMs: 0 })).toEqual(
      sec(50),
    );
    expect(firstWindowStart({ ...running(0), deadline: sec(50) }, sec(60), { ...cfg, loopMs: 0 })).toEqual(
      sec(50),
    );
    // It looped 0; this one loops 50 s: from 50 the slots in (0, 50] would wait an interval.
    expect(firstWindowStart({ ...ok(0), deadline: sec(0) }, sec(60), cfg)).toEqual(sec(0));
  });

  it(`never reaches back more than ${MaxLookBackTicks} tick periods after a long outage`, () => {
    const cap = sec(3600 - MaxLookBackTicks * 60);
    // Failed runs in a row for an hour, each carrying the window of the first.
    expect(firstWindowStart(failed(3540, 50), sec(3600), cfg)).toEqual(cap);
    // No run for an hour (the scheduler paused): the last one finished, or was killed.
    expect(firstWindowStart(ok(0), sec(3600), cfg)).toEqual(cap);
    expect(firstWindowStart(running(0), sec(3600), cfg)).toEqual(cap);
    expect(firstWindowStart(failed(0, -10), sec(3600), cfg)).toEqual(cap);
    // Within it nothing is cut: two failed runs in a row reach back three ticks minus the loop (130 s).
    expect(firstWindowStart(failed(120, 50), sec(180), cfg)).toEqual(sec(50));
  });
});
