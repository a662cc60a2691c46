// What a function instance published recently, so that its next runs do not publish a proxy again while
// the reconcile pass it asked for is still on the way (what the request is about stays unwritten until
// that pass writes). Without it, every run re-published every in-flight proxy and the Pub/Sub backlog fed
// itself. It lives as long as the instance (built by the entry point, not a module global); a new instance
// starts empty, and that only costs duplicate, idempotent passes. `at` names what a publish is about (the
// requeue sweep: the due time; the probe: the health transition status lags): another `at` is published at
// once. Pure: the caller passes the time.

/**
 * The most a hold grows to, in multiples of the first: a proxy still due at the same time after its
 * publish is published again after ttl, then 2, 4, 8 and 16 × ttl (5, 10, 20, 40 and 80 minutes in
 * production, 155 in all) — about the length of the retry chain Pub/Sub runs by itself for a pass that
 * keeps failing (15 attempts, 10–600 s apart: ~90 minutes). A lost message is still sent again after
 * the first ttl; a pass failing through a provider outage is not given a new retry chain every ttl.
 */
const MAX_HOLD_FACTOR = 16;

/**
 * The first hold of a function instance ticked every `tickPeriodMs`: five minutes — the reconcile pass a
 * publish asked for is still on the way, Pub/Sub retrying it — or a tick, if longer.
 */
export const firstHoldMs = (tickPeriodMs: number): number => Math.max(300_000, tickPeriodMs);

/** Claims held past which claim() looks for expired ones to drop. */
const SOFT_CAP = 50_000;

export class PublishHolds {
  /** `times`: how often (proxy, at) was published by this instance; each publish holds it twice as long. */
  private readonly claims = new Map<string, { at: number; claimedAt: number; times: number }>();
  /** Scans for expired claims so far (at most one per tenth of the ttl). */
  scans = 0;
  private scannedAt = Number.NEGATIVE_INFINITY;

  /**
   * `ttlMs`: after this long a proxy still due at the same `at` is published again (its pass was lost);
   * after twice as long the next time, and so on up to MAX_HOLD_FACTOR × ttlMs.
   */
  constructor(private readonly ttlMs: number) {}

  /** Whether (proxy, at) is held now: claim would refuse it. Claims nothing. */
  holds(proxy: string, at: number, now: number): boolean {
    const held = this.claims.get(proxy);
    return held?.at === at && now - held.claimedAt < this.holdFor(held.times);
  }

  /** true when (proxy, at) should be published now; it is then claimed until released or expired. */
  claim(proxy: string, at: number, now: number): boolean {
    if (this.holds(proxy, at, now)) return false;
    const held = this.claims.get(proxy);
    const same = held?.at === at ? held : undefined;
    this.claims.set(proxy, { at, claimedAt: now, times: (same?.times ?? 0) + 1 });
    // Past the cap, a scan for expired claims — but not at every claim: in a fleet of more proxies than
    // the cap, with most claims still held, each scan drops little, and one per claim made a sweep's
    // claims quadratic (11,000 claims at 55,000 held: 12 s of CPU). One per tenth of the ttl bounds both.
    if (this.claims.size > SOFT_CAP && now - this.scannedAt >= this.ttlMs / 10) this.prune(now);
    return true;
  }

  /** Not published after all (the publish failed, the sweep did): claimable again at once, as never sent. */
  release(proxy: string): void {
    const held = this.claims.get(proxy);
    if (held && held.times > 1)
      this.claims.set(proxy, { ...held, claimedAt: Number.NEGATIVE_INFINITY, times: held.times - 1 });
    else this.claims.delete(proxy);
  }

  private holdFor(times: number): number {
    return this.ttlMs * Math.min(2 ** (times - 1), MAX_HOLD_FACTOR);
  }

  private prune(now: number): void {
    this.scans++;
    this.scannedAt = now;
    for (const [k, v] of this.claims) if (now - v.claimedAt >= this.holdFor(v.times)) this.claims.delete(k);
  }
}
