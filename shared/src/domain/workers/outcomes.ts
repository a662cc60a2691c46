// ReportOutcomes (contract §5): batches with a per-session monotonic sequence; the controller answers with
// the highest accepted one, so a worker retries a batch until it is acknowledged and a re-sent batch is a
// harmless duplicate. Outcomes are observations: they are tallied per proxy for the health reducer's
// passive track (passive.ts) and never change ownership or pool state.
import type { WorkerSession } from './session.js';

/** The stages of the contract. Anything else — a newer worker's stage — is UNSPECIFIED: ignored, never guessed. */
export const OutcomeStages = ['DIAL', 'PROXY_HANDSHAKE', 'RESPONSE_HEADERS', 'TUNNEL'] as const;
export type OutcomeStage = (typeof OutcomeStages)[number];

export const knownStage = (s: string): s is OutcomeStage => (OutcomeStages as readonly string[]).includes(s);

export interface ReportedOutcome {
  proxy: string;
  stage: string;
  ok: boolean;
  latencyMs: number;
  target: string;
}

/** One proxy's outcomes in one batch: successes, failures by stage, and the latency of the successes. */
export interface OutcomeTally {
  ok: number;
  dial: number;
  proxyHandshake: number;
  responseHeaders: number;
  tunnel: number;
  latencyMsSum: number;
}

export const emptyTally = (): OutcomeTally => ({
  ok: 0,
  dial: 0,
  proxyHandshake: 0,
  responseHeaders: 0,
  tunnel: 0,
  latencyMsSum: 0,
});

const failField: Record<OutcomeStage, keyof OutcomeTally> = {
  DIAL: 'dial',
  PROXY_HANDSHAKE: 'proxyHandshake',
  RESPONSE_HEADERS: 'responseHeaders',
  TUNNEL: 'tunnel',
};

export type OutcomeBatchDecision = { kind: 'accept' } | { kind: 'duplicate'; acceptedSequence: number };

/** A sequence at or below the highest accepted one is a duplicate (already recorded or superseded). */
export function acceptOutcomeBatch(session: WorkerSession, sequence: number): OutcomeBatchDecision {
  return sequence <= session.outcomeSequence
    ? { kind: 'duplicate', acceptedSequence: session.outcomeSequence }
    : { kind: 'accept' };
}

export interface TalliedBatch {
  tallies: Map<string, OutcomeTally>;
  recorded: number;
  ignored: number;
}

/** Tallies a batch; outcomes of an unknown stage, or for a proxy `relevant` rejects, are ignored. */
export function tallyOutcomes(
  outcomes: readonly ReportedOutcome[],
  relevant: (proxy: string) => boolean,
): TalliedBatch {
  const tallies = new Map<string, OutcomeTally>();
  let ignored = 0;
  for (const o of outcomes) {
    if (!knownStage(o.stage) || !relevant(o.proxy)) {
      ignored++;
      continue;
    }
    let t = tallies.get(o.proxy);
    if (!t) {
      t = emptyTally();
      tallies.set(o.proxy, t);
    }
    if (o.ok) {
      t.ok++;
      t.latencyMsSum += Math.max(0, Math.round(o.latencyMs));
    } else {
      t[failField[o.stage]]++;
    }
  }
  return { tallies, recorded: outcomes.length - ignored, ignored };
}

export function addTally(a: OutcomeTally, b: OutcomeTally): OutcomeTally {
  return {
    ok: a.ok + b.ok,
    dial: a.dial + b.dial,
    proxyHandshake: a.proxyHandshake + b.proxyHandshake,
    responseHeaders: a.responseHeaders + b.responseHeaders,
    tunnel: a.tunnel + b.tunnel,
    latencyMsSum: a.latencyMsSum + b.latencyMsSum,
  };
}
