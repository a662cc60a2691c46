// Health verdicts per proxy × tier × routing (gateway contract §6; operator seed §6).
// The reducer turns probe results into these; several checkers never write state concurrently.

export const Tiers = ['BASIC', 'EGRESS', 'TARGET'] as const;
export type Tier = (typeof Tiers)[number];

export type Verdict = 'AVAILABLE' | 'SUSPECT' | 'UNHEALTHY';

/** The key of one health track: TARGET tracks are per routing (target group); the others are not. */
export type TrackKey = `${Exclude<Tier, 'TARGET'>}` | `TARGET:${string}`;

export function trackKey(tier: Tier, routing?: string): TrackKey {
  if (tier === 'TARGET') {
    if (!routing) throw new Error('a TARGET track needs a routing name');
    return `TARGET:${routing}`;
  }
  return tier;
}

export interface Thresholds {
  successThreshold: number;
  failureThreshold: number;
}

/** The persisted state of one track. Counters are clamped at their thresholds so that a steady track
 *  reaches a fixed point: the same result again changes nothing, and nothing is written. */
export interface TrackState {
  verdict: Verdict | null;
  consecutiveOk: number;
  consecutiveFail: number;
}

export const freshTrack = (): TrackState => ({ verdict: null, consecutiveOk: 0, consecutiveFail: 0 });
