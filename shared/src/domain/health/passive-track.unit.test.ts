import { describe, expect, it } from 'vitest';
import { nextPassive, type PassiveSettings, type PassiveTrack, samePassive } from './passive-track.js';
import type { Verdict } from './verdict.js';

const s: PassiveSettings = { successThreshold: 2, failureThreshold: 3, expiryMs: 180_000 };
const t0 = new Date('2026-01-01T00:00:00Z');
const at = (sec: number) => new Date(t0.getTime() + sec * 1000);

/** Feeds one signal per 60 s tick from a fresh instance's state (no track). */
function run(signals: Array<boolean | null>, start: PassiveTrack | null = null) {
  let p = start;
  const out: Array<PassiveTrack | null> = [];
  for (const [i, sig] of signals.entries()) {
    p = nextPassive(p, sig, s, at(i * 60));
    out.push(p);
  }
  return out;
}
const verdicts = (ps: Array<PassiveTrack | null>): Array<Verdict | null> =>
  ps.map((p) => p?.track.verdict ?? null);

describe('nextPassive: thresholds', () => {
  it.each<[string, Array<boolean | null>, Array<Verdict | null>]>([
    [
      'a fresh instance has no track, and passing signals create none',
      [true, true, null],
      [null, null, null],
    ],
    ['the first failure is SUSPECT (presumed AVAILABLE before)', [false], ['SUSPECT']],
    ['UNHEALTHY at the failure threshold', [false, false, false], ['SUSPECT', 'SUSPECT', 'UNHEALTHY']],
    [
      'a pass between failures restarts the failure streak',
      [false, false, true, false, false],
      ['SUSPECT', 'SUSPECT', 'AVAILABLE', 'SUSPECT', 'SUSPECT'],
    ],
    [
      'UNHEALTHY holds until successThreshold passes',
      [false, false, false, true],
      ['SUSPECT', 'SUSPECT', 'UNHEALTHY', 'UNHEALTHY'],
    ],
    [
      'UNHEALTHY recovers at the success threshold: the track is dropped',
      [false, false, false, true, true],
      ['SUSPECT', 'SUSPECT', 'UNHEALTHY', 'UNHEALTHY', null],
    ],
    [
      'ticks without a signal inside the expiry window change nothing',
      [false, false, false, null, null],
      ['SUSPECT', 'SUSPECT', 'UNHEALTHY', 'UNHEALTHY', 'UNHEALTHY'],
    ],
  ])('%s', (_name, signals, expected) => {
    expect(verdicts(run(signals))).toEqual(expected);
  });

  it('clamps counters: an UNHEALTHY track failing again is unchanged except for the signal time', () => {
    const [, , down, again] = run([false, false, false, false]);
    expect(again?.track).toEqual(down?.track);
    expect(again?.track).toEqual({ verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 });
    expect(again?.lastSignalAt).toEqual(at(180));
  });
});

describe('nextPassive: expiry', () => {
  const down: PassiveTrack = {
    track: { verdict: 'UNHEALTHY', consecutiveOk: 0, consecutiveFail: 3 },
    lastSignalAt: at(0),
  };
  it.each<[string, number, boolean]>([
    ['kept one tick later', 60, true],
    ['kept just before the window closes', 179, true],
    ['dropped when the window closes', 180, false],
    ['dropped long after', 3600, false],
  ])('%s (%i s without a signal)', (_name, sec, kept) => {
    expect(nextPassive(down, null, s, at(sec))).toEqual(kept ? down : null);
  });

  it('a new signal renews the window', () => {
    const renewed = nextPassive(down, false, s, at(170));
    expect(nextPassive(renewed, null, s, at(300))).toEqual(renewed);
    expect(nextPassive(renewed, null, s, at(350))).toBeNull();
  });

  // Both instants are tick starts (handler.ts startedAt), which jitter: with the tick period set, the
  // third tick after the last signal drops the track even when it starts a little early, not the fourth.
  describe('with the tick period (expiry counted in ticks)', () => {
    const ticked: PassiveSettings = { ...s, tickPeriodMs: 60_000 };
    it.each<[string, number, boolean]>([
      ['kept at the second tick', 120, true],
      ['kept until half a tick before the window closes', 149.9, true],
      ['dropped from half a tick before it', 150, false],
      ['dropped at a third tick that starts half a second early', 179.5, false],
      ['dropped at a third tick that starts late', 181, false],
    ])('%s (%d s without a signal)', (_name, sec, kept) => {
      expect(nextPassive(down, null, ticked, at(sec))).toEqual(kept ? down : null);
    });
  });

  // A gateway routes to a SUSPECT proxy only when nothing else in its route is usable, so a SUSPECT track
  // seldom gets a signal. Dropped at expiry, its count started again every time, and a proxy failed at
  // every use cycled SUSPECT → AVAILABLE without reaching the threshold.
  it('a SUSPECT track expires into AVAILABLE with its failures kept: failed at every use, it reaches UNHEALTHY', () => {
    const cycle = run([false, null, null, null, false, null, null, null, false]);
    expect(verdicts(cycle)).toEqual([
      'SUSPECT',
      'SUSPECT',
      'SUSPECT',
      'AVAILABLE',
      'SUSPECT',
      'SUSPECT',
      'SUSPECT',
      'AVAILABLE',
      'UNHEALTHY',
    ]);
    expect(cycle[3]).toEqual({
      track: { verdict: 'AVAILABLE', consecutiveOk: 0, consecutiveFail: 1 },
      lastSignalAt: at(180),
    });
  });

  it('a demoted track is dropped after one more silent window, and a pass clears its failures', () => {
    expect(verdicts(run([false, null, null, null, null, null, null]))).toEqual([
      'SUSPECT',
      'SUSPECT',
      'SUSPECT',
      'AVAILABLE',
      'AVAILABLE',
      'AVAILABLE',
      null,
    ]);
    const passed = run([false, null, null, null, true, true]);
    expect(passed[4]?.track).toEqual({ verdict: 'AVAILABLE', consecutiveOk: 1, consecutiveFail: 0 });
    expect(passed[5]).toBeNull();
  });

  it('after expiry the next failure starts again from SUSPECT', () => {
    const expired = nextPassive(down, null, s, at(600));
    expect(nextPassive(expired, false, s, at(660))?.track.verdict).toBe('SUSPECT');
  });
});

describe('samePassive', () => {
  const a: PassiveTrack = {
    track: { verdict: 'SUSPECT', consecutiveOk: 0, consecutiveFail: 1 },
    lastSignalAt: at(0),
  };
  it.each<[string, PassiveTrack | null, PassiveTrack | null, boolean]>([
    ['both absent', null, null, true],
    ['one absent', a, null, false],
    ['equal', a, { ...a, lastSignalAt: at(0) }, true],
    ['another signal time', a, { ...a, lastSignalAt: at(60) }, false],
    ['other counters', a, { ...a, track: { ...a.track, consecutiveFail: 2 } }, false],
  ])('%s', (_name, x, y, same) => expect(samePassive(x, y)).toBe(same));
});
