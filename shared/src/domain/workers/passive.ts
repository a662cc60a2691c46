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
  /** A worker with signals for at least this many proxies … */
  suspectMinProxies?: number;
  /** … of which at least this share fail is itself suspect: its tallies for the window are dropped. */
  suspectFailureShare?: number;
}

/** Three proxies, 80 % failing: one bad proxy on a small worker is not enough, a broken egress is. */
export const SUSPECT_MIN_PROXIES = 3;
export const SUSPECT_FAILURE_SHARE = 0.8;

export const DEFAULT_PASSIVE_RULE: PassiveRule = {
  minSamples: 5,
  maxFailureRatio: 0.5,
  suspectMinProxies: SUSPECT_MIN_PROXIES,
  suspectFailureShare: SUSPECT_FAILURE_SHARE,
};

export interface PassiveSignal {
  proxy: string;
  ok: boolean;
  samples: number;
  failureRatio: number;
  /** Mean latency of the successes, or null without any. */
  latencyMs: number | null;
}

/** One gateway's tallied outcomes (an outcome batch, as far as this rule cares). */
export interface WorkerTallies {
  workerId: string;
  tallies: ReadonlyMap<string, OutcomeTally>;
}

/** A worker whose outcomes in the window were dropped: it failed (nearly) every proxy it had signals for. */
export interface SuspectWorker {
  workerId: string;
  /** Proxies it had a signal for. */
  proxies: number;
  failing: number;
}

export interface PassiveWindow {
  signals: PassiveSignal[];
  suspects: SuspectWorker[];
}

/**
 * One signal per proxy over the window. A gateway whose own egress is broken fails every proxy it talks
 * to, and blaming its proxies would turn a healthy fleet UNHEALTHY: so each worker is first judged on its
 * own tallies, and one failing at least `suspectFailureShare` of at least `suspectMinProxies` proxies has
 * all of its tallies for the window dropped (and is reported). The others are summed per proxy.
 */
export function passiveSignals(
  batches: Iterable<WorkerTallies>,
  rule: PassiveRule = DEFAULT_PASSIVE_RULE,
): PassiveWindow {
  const perWorker = new Map<string, Map<string, OutcomeTally>>();
  for (const b of batches) {
    const sums = perWorker.get(b.workerId) ?? new Map<string, OutcomeTally>();
    perWorker.set(b.workerId, sums);
    for (const [proxy, t] of b.tallies) sums.set(proxy, addTally(sums.get(proxy) ?? emptyTally(), t));
  }
  const minProxies = rule.suspectMinProxies ?? SUSPECT_MIN_PROXIES;
  const share = rule.suspectFailureShare ?? SUSPECT_FAILURE_SHARE;
  const suspects: SuspectWorker[] = [];
  const sums = new Map<string, OutcomeTally>();
  for (const [workerId, own] of [...perWorker].sort(([a], [b]) => compare(a, b))) {
    const judged = signalsOf(own, rule);
    const failing = judged.filter((s) => !s.ok).length;
    if (judged.length >= minProxies && failing >= share * judged.length) {
      suspects.push({ workerId, proxies: judged.length, failing });
      continue;
    }
    for (const [proxy, t] of own) sums.set(proxy, addTally(sums.get(proxy) ?? emptyTally(), t));
  }
  return { signals: signalsOf(sums, rule), suspects };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function signalsOf(sums: ReadonlyMap<string, OutcomeTally>, rule: PassiveRule): PassiveSignal[] {
  const out: PassiveSignal[] = [];
  for (const [proxy, t] of [...sums].sort(([a], [b]) => compare(a, b))) {
    // A TUNNEL failure follows a success of its own request (a response head, a CONNECT tunnel once
    // established): it takes that success back, so the request counts once, as what it ended as. Counted
    // beside it, a tunnel that broke would dilute the proxy's dial and handshake failures, and a proxy
    // that resets every tunnel would hold a success per failure and never fail.
    const ok = t.ok - Math.min(t.ok, t.tunnel);
    const ambiguous = t.responseHeaders + t.tunnel;
    const samples = ok + t.dial + t.proxyHandshake + ambiguous;
    if (samples < rule.minSamples) continue;
    const failures = t.dial + t.proxyHandshake + (ok === 0 ? ambiguous : 0);
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
