// A one-time outcome — "the first snapshot loaded", "a read of every lease state landed" — that any
// number of requests wait on, each giving up on its own deadline. One that gives up leaves nothing behind.
// Waiting on a promise that stays pending does not: Promise.race, or a .then() beside a timer, adds a
// reaction to it per call that lives until it settles — 1–1.6 KB a request in the lease store's waits —
// and "until" is as long as Firestore stays unreachable (a replica started while IAM is broken answers
// 503 for hours, to crawlers that retry), so the replica ran out of memory before it could recover.

export class Latch<T = void> {
  private outcome: { ok: true; value: T } | { ok: false; error: unknown } | null = null;
  private readonly waiters = new Set<{ resolve: (value: T) => void; reject: (err: unknown) => void }>();

  /** A latch that settles as `promise` does: one reaction on it, however many wait. */
  static following<T>(promise: Promise<T>): Latch<T> {
    const latch = new Latch<T>();
    promise.then(
      (value) => latch.resolve(value),
      (err: unknown) => latch.reject(err),
    );
    return latch;
  }

  get settled(): boolean {
    return this.outcome !== null;
  }

  /** How many callers are waiting right now. */
  get waiting(): number {
    return this.waiters.size;
  }

  resolve(value: T): void {
    this.settle({ ok: true, value });
  }

  reject(error: unknown): void {
    this.settle({ ok: false, error });
  }

  /**
   * The outcome once there is one; or `signal`'s reason once it aborts first, and the caller is forgotten
   * (a controller for "no longer needed"; within() for a deadline).
   */
  wait(signal: AbortSignal): Promise<T> {
    const outcome = this.outcome;
    if (outcome) return outcome.ok ? Promise.resolve(outcome.value) : Promise.reject(outcome.error);
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.waiters.delete(waiter);
        reject(signal.reason);
      };
      const waiter = {
        resolve: (value: T) => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
        reject: (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      this.waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** wait() for at most `ms`: past it, `timeout()`'s error (its timer cleared as soon as it settles). */
  async within(ms: number, timeout: () => Error): Promise<T> {
    const outcome = this.outcome;
    if (outcome) {
      if (outcome.ok) return outcome.value;
      throw outcome.error;
    }
    const gaveUp = new AbortController();
    const timer = setTimeout(() => gaveUp.abort(timeout()), ms);
    try {
      return await this.wait(gaveUp.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  private settle(outcome: NonNullable<Latch<T>['outcome']>): void {
    if (this.outcome) return;
    this.outcome = outcome;
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) {
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    }
  }
}
