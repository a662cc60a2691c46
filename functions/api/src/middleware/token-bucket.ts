// Token buckets in the memory of one API instance (contract §8: limits on every endpoint), keyed by
// whatever the caller says (the worker routes: endpoint and worker id, workers/rate-limit.ts; the crawler
// and admin routes: route class and principal, caller-rate-limit.ts). Bounded: the stalest keys are evicted,
// so a caller cycling through ids costs memory it cannot grow. A cluster-wide limit would need a shared store
// for a check that must stay cheaper than the call it protects; per instance is the usual trade (Cloud Run's
// instance count bounds the total).
export interface RateSpec {
  /** Tokens added per second (the sustained rate). */
  perSecond: number;
  /** The bucket's size: how many requests may come at once after a quiet spell. */
  burst: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly now: () => number,
    private readonly maxKeys = 10_000,
  ) {}

  take(key: string, spec: RateSpec): RateDecision {
    const t = this.now();
    const b = this.buckets.get(key) ?? { tokens: spec.burst, at: t };
    const tokens = Math.min(spec.burst, b.tokens + ((t - b.at) / 1000) * spec.perSecond);
    this.buckets.delete(key); // re-inserted below: Map order is recency, the first key the stalest
    if (tokens < 1) {
      this.buckets.set(key, { tokens, at: t });
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / spec.perSecond)) };
    }
    this.buckets.set(key, { tokens: tokens - 1, at: t });
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    return { ok: true };
  }

  /** How many keys are held (never more than maxKeys). */
  get size(): number {
    return this.buckets.size;
  }
}
