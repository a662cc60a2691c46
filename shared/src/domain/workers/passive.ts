// Gateway outcomes as passive health signals (contract §5 + §6): over a window of tallied batches, one
// pass/fail signal per proxy that the probe — the single writer of health state — feeds to the reducer as
// a PASSIVE track with its own thresholds. A failure to dial the proxy or to complete the handshake with it
// is the proxy's fault; a failure before the target's headers or inside the tunnel may be the target's, so
// it counts against the proxy only when the proxy had no success at all in the window.
import { addTally, emptyTally, type OutcomeTally } from './outcomes.js';

export interface PassiveRule {
  /** Fewer outcomes than this in the window: no signal (too little evidence either way). */
  minSamples: number;
  /** A failure share at or above this is a failed signal. */
  maxFailureRatio: number;
}

export const DEFAULT_PASSIVE_RULE: PassiveRule = { minSamples: 5, maxFailureRatio: 0.5 };

export interface PassiveSignal {
  proxy: string;
  ok: boolean;
  samples: number;
  failureRatio: number;
  /** Mean latency of the successes, or null without any. */
  latencyMs: number | null;
}

export function passiveSignals(
  batches: Iterable<ReadonlyMap<string, OutcomeTally>>,
  rule: PassiveRule = DEFAULT_PASSIVE_RULE,
): PassiveSignal[] {
  const sums = new Map<string, OutcomeTally>();
  for (const batch of batches) {
    for (const [proxy, t] of batch) sums.set(proxy, addTally(sums.get(proxy) ?? emptyTally(), t));
  }
  const out: PassiveSignal[] = [];
  for (const [proxy, t] of [...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const ambiguous = t.responseHeaders + t.tunnel;
    const samples = t.ok + t.dial + t.proxyHandshake + ambiguous;
    if (samples < rule.minSamples) continue;
    const failures = t.dial + t.proxyHandshake + (t.ok === 0 ? ambiguous : 0);
    const failureRatio = failures / samples;
    out.push({
      proxy,
      ok: failureRatio < rule.maxFailureRatio,
      samples,
      failureRatio,
      latencyMs: t.ok > 0 ? Math.round(t.latencyMsSum / t.ok) : null,
    });
  }
  return out;
}
