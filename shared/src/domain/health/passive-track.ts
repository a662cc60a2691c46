// The PASSIVE track: gateway outcomes (contract §5) as health evidence beside the active tiers (§6). The
// probe turns each tick's outcome batches into one pass/fail signal per proxy (workers/passive.ts) and
// reduces it here with the track's own thresholds; the proxy's verdict is the worst of its tracks.
//
// Two rules keep the track honest and cheap:
//   - Presumed AVAILABLE: a proxy the gateways have said nothing bad about has no PASSIVE track at all; a
//     track back at that point (AVAILABLE, counters clamped) is dropped. A busy healthy fleet therefore
//     stores nothing for it and writes nothing per tick, and the first failed signal already reads SUSPECT.
//   - Expiry: a proxy that turns unhealthy leaves the gateways' snapshots and gets no more outcomes, so a
//     track with no signal for `expiryMs` is dropped and the active tiers alone decide again. Without it a
//     proxy failed by the gateways would stay unhealthy forever. A SUSPECT track is not dropped but
//     demoted: AVAILABLE again, its failures kept, for one more window. A gateway routes to a SUSPECT
//     proxy only when nothing else in the route is usable, so it seldom gets a signal; dropped, its count
//     started again at every expiry, and a proxy the gateways fail at every use cycled SUSPECT → AVAILABLE
//     and never reached the failure threshold — Healthy, leased and listed for good.
import { reduceTrack, sameTrack } from './reducer.js';
import type { Thresholds, TrackState } from './verdict.js';

export interface PassiveSettings extends Thresholds {
  /** Drop (SUSPECT: demote) a PASSIVE track that has had no signal for this long. */
  expiryMs: number;
  /** The probe tick's period: signals come once a tick, stamped with the tick's start, and tick starts
   *  jitter (Scheduler, Pub/Sub delivery, cold starts). With it the expiry counts in ticks: a track goes at
   *  the first tick at least `expiryMs` less half a tick after its last signal — for three ticks the third,
   *  even when it starts a little early (179.5 s), not the fourth. Unset: exactly `expiryMs`. */
  tickPeriodMs?: number;
}

/** success 2 / failure 3: one bad minute of gateway traffic is SUSPECT, three in a row UNHEALTHY.
 *  Expiry: three 60 s probe ticks without a signal. */
export const DEFAULT_PASSIVE_SETTINGS: PassiveSettings = {
  successThreshold: 2,
  failureThreshold: 3,
  expiryMs: 180_000,
};

export interface PassiveTrack {
  track: TrackState;
  /** When the last signal (pass or fail) arrived, or a SUSPECT track was demoted: the track expires
   *  `expiryMs` after it (less half a tick, with `tickPeriodMs`). */
  lastSignalAt: Date;
}

/** The state that needs no storing: no evidence against the proxy. */
export const neutralPassive = (s: Thresholds): TrackState => ({
  verdict: 'AVAILABLE',
  consecutiveOk: s.successThreshold,
  consecutiveFail: 0,
});

/**
 * The PASSIVE track after this tick: `signal` is the gateways' verdict on the proxy over the tick's
 * outcomes (true = pass), or null when there was none (too few outcomes, or none at all).
 */
export function nextPassive(
  current: PassiveTrack | null,
  signal: boolean | null,
  s: PassiveSettings,
  now: Date,
): PassiveTrack | null {
  if (signal === null) {
    if (current === null) return null;
    const expiresAfter = s.expiryMs - (s.tickPeriodMs ?? 0) / 2;
    if (now.getTime() - current.lastSignalAt.getTime() < expiresAfter) return current;
    // Expired. SUSPECT: demoted, its failures kept, for one more window (above); anything else dropped.
    if (current.track.verdict !== 'SUSPECT') return null;
    const { consecutiveFail } = current.track;
    return { track: { verdict: 'AVAILABLE', consecutiveOk: 0, consecutiveFail }, lastSignalAt: now };
  }
  const track = reduceTrack(current?.track ?? neutralPassive(s), signal, s);
  return sameTrack(track, neutralPassive(s)) ? null : { track, lastSignalAt: now };
}

export const samePassive = (a: PassiveTrack | null, b: PassiveTrack | null): boolean =>
  a === null || b === null
    ? a === b
    : sameTrack(a.track, b.track) && a.lastSignalAt.getTime() === b.lastSignalAt.getTime();
