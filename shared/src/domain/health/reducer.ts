// The pure health reducer (operator seed §6 `record`): the verdict flips only at a threshold.
//   AVAILABLE  after successThreshold consecutive successes
//   UNHEALTHY  after failureThreshold consecutive failures
//   SUSPECT    an AVAILABLE track that has started failing but has not reached failureThreshold;
//              it is still usable (the Healthy condition stays True, reason ProbeSuspect/PassiveSuspect)
//              but lease selection ranks it below AVAILABLE (leases/selection.ts), and so does the
//              gateways' pick (a snapshot entry's `suspect`, protocol 5: gateway/routing.ts).
import type { Thresholds, TrackState, Verdict } from './verdict.js';

export function reduceTrack(state: TrackState, ok: boolean, t: Thresholds): TrackState {
  const consecutiveOk = ok ? Math.min(state.consecutiveOk + 1, t.successThreshold) : 0;
  const consecutiveFail = ok ? 0 : Math.min(state.consecutiveFail + 1, t.failureThreshold);
  return {
    verdict: nextVerdict(state.verdict, ok, consecutiveOk, consecutiveFail, t),
    consecutiveOk,
    consecutiveFail,
  };
}

function nextVerdict(
  current: Verdict | null,
  ok: boolean,
  consecutiveOk: number,
  consecutiveFail: number,
  t: Thresholds,
): Verdict | null {
  if (ok) {
    if (consecutiveOk >= t.successThreshold) return 'AVAILABLE';
    // Recovering from SUSPECT needs no threshold: it never left AVAILABLE's side of the line.
    return current === 'SUSPECT' ? 'AVAILABLE' : current;
  }
  if (consecutiveFail >= t.failureThreshold) return 'UNHEALTHY';
  return current === 'AVAILABLE' ? 'SUSPECT' : current;
}

export const sameTrack = (a: TrackState, b: TrackState): boolean =>
  a.verdict === b.verdict && a.consecutiveOk === b.consecutiveOk && a.consecutiveFail === b.consecutiveFail;

/** Healthy condition value of a verdict: SUSPECT is still healthy; no verdict yet is unknown. */
export function healthyOf(verdict: Verdict | null): boolean | null {
  if (verdict === null) return null;
  return verdict !== 'UNHEALTHY';
}

/** The worst of some verdicts, null if any is null (verdict-reason.ts says which tracks count). */
export function worstVerdict(verdicts: Array<Verdict | null>): Verdict | null {
  const rank: Record<Verdict, number> = { AVAILABLE: 0, SUSPECT: 1, UNHEALTHY: 2 };
  let worst: Verdict | null = null;
  for (const v of verdicts) {
    if (v === null) return null; // a tier with no verdict yet: the proxy has none either
    if (worst === null || rank[v] > rank[worst]) worst = v;
  }
  return worst;
}
