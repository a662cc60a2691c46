import { describe, expect, it } from 'vitest';
import { healthyOf, reduceTrack, worstVerdict } from './reducer.js';
import { freshTrack, type TrackState, type Verdict } from './verdict.js';

const t = { successThreshold: 2, failureThreshold: 3 };
const run = (results: boolean[], start: TrackState = freshTrack()) =>
  results.reduce((s, ok) => reduceTrack(s, ok, t), start);

describe('reduceTrack', () => {
  it.each<[string, boolean[], Verdict | null]>([
    ['no verdict before the success threshold', [true], null],
    ['AVAILABLE at the success threshold', [true, true], 'AVAILABLE'],
    ['no verdict before the failure threshold', [false, false], null],
    ['UNHEALTHY at the failure threshold', [false, false, false], 'UNHEALTHY'],
    ['AVAILABLE then one failure is SUSPECT', [true, true, false], 'SUSPECT'],
    ['SUSPECT recovers on the next success', [true, true, false, true], 'AVAILABLE'],
    ['SUSPECT becomes UNHEALTHY at the threshold', [true, true, false, false, false], 'UNHEALTHY'],
    ['UNHEALTHY stays until successThreshold successes', [false, false, false, true], 'UNHEALTHY'],
    ['UNHEALTHY recovers at the success threshold', [false, false, false, true, true], 'AVAILABLE'],
    ['a failure resets the success streak', [true, false, true], null],
  ])('%s', (_name, results, verdict) => {
    expect(run(results).verdict).toBe(verdict);
  });

  it('clamps counters so that a steady track is a fixed point', () => {
    const steady = run([true, true, true, true, true]);
    expect(steady).toEqual({ verdict: 'AVAILABLE', consecutiveOk: 2, consecutiveFail: 0 });
    expect(reduceTrack(steady, true, t)).toEqual(steady);
    const down = run([false, false, false, false, false]);
    expect(reduceTrack(down, false, t)).toEqual(down);
  });
});

describe('healthyOf / worstVerdict', () => {
  it.each<[Verdict | null, boolean | null]>([
    [null, null],
    ['AVAILABLE', true],
    ['SUSPECT', true],
    ['UNHEALTHY', false],
  ])('healthyOf(%s) = %s', (v, h) => expect(healthyOf(v)).toBe(h));

  it.each<[Array<Verdict | null>, Verdict | null]>([
    [['AVAILABLE', 'AVAILABLE'], 'AVAILABLE'],
    [['AVAILABLE', 'SUSPECT'], 'SUSPECT'],
    [['UNHEALTHY', 'SUSPECT'], 'UNHEALTHY'],
    [['AVAILABLE', null], null],
  ])('worstVerdict(%j) = %s', (vs, w) => expect(worstVerdict(vs)).toBe(w));
});
