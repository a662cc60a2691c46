// How a proxy's tracks combine into its verdict, and the condition reason status shows for it. The active
// tiers (BASIC, EGRESS) decide whether there is a verdict at all; the gateways' PASSIVE track can only make
// it worse (contract §6: the reducer decides per proxy × tier; the worst one wins).

import type { PassiveTrack } from './passive-track.js';
import type { ProxyHealthState } from './proxy-health.js';
import { worstVerdict } from './reducer.js';
import type { TrackKey, TrackState, Verdict } from './verdict.js';

export function proxyVerdict(
  tracks: Partial<Record<TrackKey, TrackState>>,
  passive: PassiveTrack | null,
): Verdict | null {
  const active = activeVerdict(tracks);
  // No active verdict yet: the gateways' word alone never makes one (they only see proxies that had one).
  if (active === null || passive === null) return active;
  return worstVerdict([active, passive.track.verdict ?? 'AVAILABLE']);
}

const activeVerdict = (tracks: Partial<Record<TrackKey, TrackState>>): Verdict | null =>
  worstVerdict([tracks.BASIC?.verdict ?? null, tracks.EGRESS?.verdict ?? null]);

/** The Healthy condition's reason and message. The active tiers' own failure explains first; PASSIVE
 *  explains only a verdict that the active tiers alone would not give. The stored verdict is the truth
 *  (a state without tracks — an older document — still has a reason). */
export function healthReason(s: ProxyHealthState): { reason: string; message: string } | null {
  if (s.verdict === null) return null;
  const active = activeVerdict(s.tracks);
  const passiveDecides =
    active !== null && s.passive?.track.verdict === s.verdict && RANK[active] < RANK[s.verdict];
  if (s.verdict === 'UNHEALTHY') {
    if (passiveDecides) {
      return {
        reason: 'PassiveFailures',
        message: 'gateways keep failing to dial the proxy or to complete its handshake (passive signals)',
      };
    }
    return s.egressProblem
      ? { reason: 'EgressCheckFailed', message: `egress check failed: ${s.egressProblem}` }
      : { reason: 'ProbeFailed', message: 'the proxy failed its health checks' };
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

const RANK: Record<Verdict, number> = { AVAILABLE: 0, SUSPECT: 1, UNHEALTHY: 2 };
