// Bounded exponential backoff with jitter for the worker's calls to the control plane (control-plane seed
// §7: "retry with bounded exponential backoff and jitter"). "Equal jitter": half of the capped delay is
// fixed and half is random, so a retry never comes sooner than half the step (never a tight loop) and
// never later than the cap, while a fleet of workers that failed together spreads out.
// (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/)

export interface BackoffPolicy {
  /** The first delay's cap. */
  readonly initialMs: number;
  /** No delay is longer than this. */
  readonly maxMs: number;
  /** Growth per attempt; 2 unless said otherwise. */
  readonly multiplier?: number;
}

/** The delay before retry number `attempt` (0-based), `random` in [0, 1). */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: number): number {
  const growth = (policy.multiplier ?? 2) ** Math.max(0, Math.min(attempt, 60));
  const cap = Math.min(policy.maxMs, policy.initialMs * growth);
  const r = Number.isFinite(random) ? Math.min(Math.max(random, 0), 1) : 0;
  return Math.round(cap / 2 + (cap / 2) * r);
}

/** One retry sequence: next() grows the delay, reset() after a success starts over. */
export class Backoff {
  private attempts = 0;

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly random: () => number,
  ) {}

  get attempt(): number {
    return this.attempts;
  }

  next(): number {
    return backoffDelay(this.attempts++, this.policy, this.random());
  }

  reset(): void {
    this.attempts = 0;
  }
}
