// What this function instance published recently, so that the next sweeps do not publish a proxy again
// while its reconcile pass is still on the way (a due time stays in the past until that pass writes).
// Without it, every sweep re-published every in-flight proxy and the Pub/Sub backlog fed itself. It
// lives as long as the instance (built by the entry point, not a module global); a new instance starts
// empty, and that only costs duplicate, idempotent passes.
export class PublishMemory {
  private readonly claims = new Map<string, { at: number; claimedAt: number }>();
  /**
   * Where the drift range of this instance's latest sweep ends (ms since the epoch); when that sweep
   * failed, where its range began, since none of it is known to be published.
   */
  drift: { through: number; failed: boolean } | null = null;

  /** `ttlMs`: after this long a proxy still due at the same time is published again (its pass was lost). */
  constructor(private readonly ttlMs: number) {}

  /** true when (proxy, at) should be published now; it is then claimed until released or expired. */
  claim(proxy: string, at: number, now: number): boolean {
    const held = this.claims.get(proxy);
    if (held && held.at === at && now - held.claimedAt < this.ttlMs) return false;
    this.claims.set(proxy, { at, claimedAt: now });
    if (this.claims.size > 50_000) this.prune(now);
    return true;
  }

  release(proxy: string): void {
    this.claims.delete(proxy);
  }

  private prune(now: number): void {
    for (const [k, v] of this.claims) if (now - v.claimedAt >= this.ttlMs) this.claims.delete(k);
  }
}
