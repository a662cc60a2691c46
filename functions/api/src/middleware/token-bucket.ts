// Token buckets in the memory of one API instance (contract §8: limits on every endpoint), keyed by
// whatever the caller says (the worker routes: endpoint and worker id, workers/rate-limit.ts; the crawler
// and admin routes: route class and principal, caller-rate-limit.ts; failed authentication: the client's
// address, auth-failure-limit.ts). Bounded: the stalest keys are evicted, so a caller cycling through ids
// costs memory it cannot grow; and a bucket that has filled up again is forgotten (a full bucket and no
// bucket answer alike), so an idle key costs nothing for long. A cluster-wide limit would need a shared
// store for a check that must stay cheaper than the call it protects; per instance is the usual trade
// (Cloud Run's instance count bounds the total).
export interface RateSpec {
  /** Tokens added per second (the sustained rate). */
  perSecond: number;
  /** The bucket's size: how many requests may come at once after a quiet spell. */
  burst: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  /** When `tokens` was counted. */
  at: number;
  /** When the bucket is full again if nothing is taken: from then on it may be forgotten. */
  fullAt: number;
}

const refilled = (b: Bucket, t: number, spec: RateSpec) =>
  Math.min(spec.burst, b.tokens + ((t - b.at) / 1000) * spec.perSecond);

const refusal = (tokens: number, spec: RateSpec): RateDecision => ({
  ok: false,
  retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / spec.perSecond)),
});

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly now: () => number,
    private readonly maxKeys = 10_000,
  ) {}

  take(key: string, spec: RateSpec): RateDecision {
    const t = this.now();
    this.forgetFull(t);
    const b = this.buckets.get(key);
    const tokens = b ? refilled(b, t, spec) : spec.burst;
    this.buckets.delete(key); // re-inserted below: Map order is recency, the first key the stalest
    const left = tokens < 1 ? tokens : tokens - 1;
    this.buckets.set(key, { tokens: left, at: t, fullAt: t + ((spec.burst - left) / spec.perSecond) * 1000 });
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    return tokens < 1 ? refusal(tokens, spec) : { ok: true };
  }

  /**
   * What take() would answer now, without taking a token, adding the key or touching its recency: for a
   * limit that is checked before a request and spent only by some of them (auth-failure-limit.ts).
   */
  peek(key: string, spec: RateSpec): RateDecision {
    const b = this.buckets.get(key);
    if (!b) return { ok: true };
    const tokens = refilled(b, this.now(), spec);
    return tokens < 1 ? refusal(tokens, spec) : { ok: true };
  }

  /** How many keys are held (never more than maxKeys). */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * Drops the stalest buckets that are full again, stopping at the first that is not: each key is
   * dropped at most once per take() that added it, so this costs O(1) per take() on average.
   */
  private forgetFull(t: number): void {
    for (const [key, b] of this.buckets) {
      if (b.fullAt > t) return;
      this.buckets.delete(key);
    }
  }
}
