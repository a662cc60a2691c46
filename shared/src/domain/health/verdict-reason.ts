// How a proxy's tracks combine into its verdict, and the condition reason status shows for it. The active
// tiers (BASIC, EGRESS) decide whether there is a verdict at all; the gateways' PASSIVE track can only make
// it worse (contract §6: the reducer decides per proxy × tier; the worst one wins).

import type { PassiveTrack } from './passive-track.js';
import type { ProxyHealthState } from './proxy-health.js';
import { worstVerdict } from './reducer.js';
import type { TrackKey, TrackState, Verdict } from './verdict.js';

/** The Healthy condition reasons of a SUSPECT verdict (still Healthy=True): lease selection ranks such a
 *  proxy below the AVAILABLE ones (leases/selection.ts). */
export const SUSPECT_REASONS: ReadonlySet<string> = new Set(['ProbeSuspect', 'PassiveSuspect']);

/** The active tiers a probe runs; EGRESS only when the echo endpoint is configured. */
export type ActiveTrack = 'BASIC' | 'EGRESS';
export const ACTIVE_TRACKS: readonly ActiveTrack[] = ['BASIC', 'EGRESS'];

/** The proxy's verdict from its active tiers' one and the gateways' PASSIVE track, which can only make it
 *  worse. No active verdict: the gateways' word alone never makes one (they only see proxies that had one). */
export function withPassive(active: Verdict | null, passive: PassiveTrack | null): Verdict | null {
  if (active === null || passive === null) return active;
  return worstVerdict([active, passive.track.verdict ?? 'AVAILABLE']);
}

/** A known UNHEALTHY tier decides alone: EGRESS runs only through a proxy that passes BASIC, so a proxy
 *  failing BASIC from its first probe never gets an EGRESS verdict, and must still become UNHEALTHY.
 *  Otherwise every active tier — `active`: those this probe runs — needs a verdict, and the worst one
 *  wins; null while one has none. */
export function activeVerdict(
  tracks: Partial<Record<TrackKey, TrackState>>,
  active: readonly ActiveTrack[],
): Verdict | null {
  const verdicts = active.map((k) => tracks[k]?.verdict ?? null);
  return verdicts.includes('UNHEALTHY') ? 'UNHEALTHY' : worstVerdict(verdicts);
}

/** The Healthy condition's reason and message. The active tiers' own failure explains first (BASIC before
 *  EGRESS: an unreachable proxy is not an egress problem); PASSIVE explains only a verdict that the active
 *  tiers alone would not give. The stored verdict is the truth (a state without tracks — an older
 *  document — still has a reason); the active verdict it was made from is keptActiveVerdict's. */
export function healthReason(s: ProxyHealthState): { reason: string; message: string } | null {
  if (s.verdict === null) return null;
  const active = keptActiveVerdict(s);
  const passiveDecides =
    active !== null && s.passive?.track.verdict === s.verdict && RANK[active] < RANK[s.verdict];
  if (s.verdict === 'UNHEALTHY') {
    if (passiveDecides) {
      // Not only dials and handshakes: a window of failed requests without one success (RESPONSE_HEADERS,
      // TUNNEL — possibly a dead target behind a working proxy) fails it too (workers/passive.ts signalsOf).
      return {
        reason: 'PassiveFailures',
        message:
          'gateways keep failing through the proxy (failed dials or handshakes, or failed requests with no ' +
          'success at all in the window; passive signals)',
      };
    }
    return egressFailed(s)
      ? { reason: 'EgressCheckFailed', message: `egress check failed: ${s.egressProblem}` }
      : { reason: 'ProbeFailed', message: probeFailedMessage(s) };
  }
  if (s.verdict === 'SUSPECT') {
    return passiveDecides
      ? {
          reason: 'PassiveSuspect',
          message: 'health verdict SUSPECT: gateways report failures (passive signals)',
        }
      : { reason: 'ProbeSuspect', message: 'health verdict SUSPECT' };
  }
  return { reason: 'ProbeSucceeded', message: `health verdict ${s.verdict}` };
}

/** Names the BASIC failure when BASIC is what failed (an older stored state has no code: the bare text). */
function probeFailedMessage(s: ProxyHealthState): string {
  const base = 'the proxy failed its health checks';
  return s.basicProblem && s.tracks.BASIC?.verdict === 'UNHEALTHY'
    ? `${base}: BASIC ${s.basicProblem}`
    : base;
}

/** EGRESS explains an UNHEALTHY verdict once its own track is UNHEALTHY (a kept verdict may wait on an
 *  undecided one), and not while BASIC fails: an unreachable proxy is not an egress problem. A stored
 *  state without tracks (an older document) keeps its stored problem. */
function egressFailed(s: ProxyHealthState): boolean {
  const egress = s.tracks.EGRESS?.verdict;
  return (
    s.egressProblem !== null &&
    s.tracks.BASIC?.verdict !== 'UNHEALTHY' &&
    (egress === undefined || egress === 'UNHEALTHY')
  );
}

/**
 * The active tiers' verdict `s.verdict` was made from (PASSIVE not counted), as decideHealth keeps it while
 * a tier is undecided: the stored one; in a document without it (written before the field, or by an older
 * revision during a rollout), what the stored tracks give, with the stored verdict standing in only when
 * they give none. A stored one worse than the verdict cannot have made it (the verdict is the worse of it
 * and PASSIVE): an older revision's write moved the verdict and left the field as it was; not taken.
 */
export function keptActiveVerdict(s: ProxyHealthState): Verdict | null {
  if (s.verdict === null) return null; // no verdict yet: an undecided tier makes none
  const stored = s.activeVerdict ?? null;
  if (stored !== null && RANK[stored] <= RANK[s.verdict]) return stored;
  const present = ACTIVE_TRACKS.filter((k) => s.tracks[k] !== undefined);
  return activeVerdict(s.tracks, present) ?? s.verdict;
}

const RANK: Record<Verdict, number> = { AVAILABLE: 0, SUSPECT: 1, UNHEALTHY: 2 };
