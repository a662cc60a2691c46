// Token buckets in the memory of one API instance (contract §8: limits on every endpoint), keyed by
// whatever the caller says (the worker routes: endpoint and worker id, workers/rate-limit.ts; the crawler
// and admin routes: route class and principal, caller-rate-limit.ts; failed authentication: the client's
// address, auth-failure-limit.ts). Bounded: a bucket that has filled up again is forgotten (a full bucket
// and no bucket answer alike), so an idle key costs nothing for long; and past `maxKeys` held, a new key
// either evicts the stalest (`evict-stalest`: for keys a caller had to authenticate to name, where a reset
// bucket only frees that caller) or, once a sweep of every bucket that has filled up again made no room
// (at most one sweep per SWEEP_INTERVAL_MS), shares one overflow bucket with every other new key
// (`share-overflow`: for keys anyone can pick — addresses — where evicting a still-spent bucket would hand
// an attacker cycling through 10,000 addresses a fresh burst each time). A cluster-wide limit would need a shared
// store for a check that must stay cheaper than the call it protects; per instance is the usual trade
// (Cloud Run's instance count bounds the total).
export interface RateSpec {
  /** Tokens added per second (the sustained rate). */
  perSecond: number;
  /** The bucket's size: how many requests may come at once after a quiet spell. */
  burst: number;
}

/** A refusal says `shared` when it was the overflow bucket's (share-overflow), not the key's own. */
export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number; shared?: true };

interface Bucket {
  tokens: number;
  /** When `tokens` was counted. */
  at: number;
  /** When the bucket is full again if nothing is taken: from then on it may be forgotten. */
  fullAt: number;
}

const refilled = (b: Bucket, t: number, spec: RateSpec) =>
  Math.min(spec.burst, b.tokens + ((t - b.at) / 1000) * spec.perSecond);

const refusal = (tokens: number, spec: RateSpec, slot: string): RateDecision => ({
  ok: false,
  retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / spec.perSecond)),
  ...(slot === OVERFLOW_KEY ? { shared: true as const } : {}),
});

/** What a RateLimiter does with a new key once it holds `maxKeys` (see the top of this file). */
export type WhenFull = 'evict-stalest' | 'share-overflow';

/** The key of the one bucket new keys share past `maxKeys` under `share-overflow` (no key can be it). */
export const OVERFLOW_KEY = '\u0000overflow';

/** At capacity under share-overflow, how often at most every bucket is looked at for room. */
export const SWEEP_INTERVAL_MS = 100;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweptAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly now: () => number,
    private readonly maxKeys = 10_000,
    private readonly whenFull: WhenFull = 'evict-stalest',
  ) {}

  /** Takes a token from the key's bucket, or answers when one is back (and takes nothing). */
  take(key: string, spec: RateSpec): RateDecision {
    const { slot, tokens, t } = this.current(key, spec);
    this.put(slot, tokens < 1 ? tokens : tokens - 1, t, spec);
    return tokens < 1 ? refusal(tokens, spec, slot) : { ok: true };
  }

  /**
   * What take() would answer now, without taking a token, adding the key or touching its recency: for a
   * limit that is checked before a request and spent only by some of them (auth-failure-limit.ts). A new
   * key past maxKeys under `share-overflow` is answered by the overflow bucket.
   */
  peek(key: string, spec: RateSpec): RateDecision {
    const { slot, tokens } = this.current(key, spec);
    return tokens < 1 ? refusal(tokens, spec, slot) : { ok: true };
  }

  /**
   * Spends a token after the fact, even one the bucket no longer has: of requests in flight together that
   * all passed peek() at the last token, take() would charge the first alone; here each costs one and the
   * bucket owes the rest before peek() lets another through. The debt is as deep as the requests that
   * overshot, so the rate over time stays the spec's. For callers to keep it bounded: charge only requests
   * that passed peek() (at most as many as are in flight at once), take() for the others.
   */
  charge(key: string, spec: RateSpec): void {
    const { slot, tokens, t } = this.current(key, spec);
    this.put(slot, tokens - 1, t, spec);
  }

  /** How many keys are held: never more than maxKeys (and the overflow bucket). */
  get size(): number {
    return this.buckets.size;
  }

  /** The bucket the key is counted in now, and its tokens (after forgetting the full ones). */
  private current(key: string, spec: RateSpec): { slot: string; tokens: number; t: number } {
    const t = this.now();
    this.forgetFull(t);
    const slot = this.slot(key, t);
    const b = this.buckets.get(slot);
    return { slot, tokens: b ? refilled(b, t, spec) : spec.burst, t };
  }

  /** The bucket a key is counted in: its own, unless it is new, there is no room, and new keys share. */
  private slot(key: string, t: number): string {
    if (this.whenFull === 'evict-stalest' || this.buckets.has(key)) return key;
    if (this.hasRoom()) return key;
    // forgetFull() stops at the stalest bucket still spent: full ones behind it hold room it cannot see
    if (t - this.sweptAt >= SWEEP_INTERVAL_MS) {
      this.sweptAt = t;
      for (const [k, b] of this.buckets) if (b.fullAt <= t) this.buckets.delete(k);
      if (this.hasRoom()) return key;
    }
    return OVERFLOW_KEY;
  }

  private hasRoom(): boolean {
    return this.buckets.size - (this.buckets.has(OVERFLOW_KEY) ? 1 : 0) < this.maxKeys;
  }

  /** Stores a bucket as the most recent key (Map order is recency: the first key is the stalest). */
  private put(key: string, tokens: number, t: number, spec: RateSpec): void {
    this.buckets.delete(key);
    this.buckets.set(key, { tokens, at: t, fullAt: t + ((spec.burst - tokens) / spec.perSecond) * 1000 });
    if (this.whenFull === 'evict-stalest' && this.buckets.size > this.maxKeys) {
      this.buckets.delete(this.buckets.keys().next().value!);
    }
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
