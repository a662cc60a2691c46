// A pass-wide bound on requests in flight whose callers may give up waiting: the TARGET tier's own slots
// (docs/health.md § TARGET). A proxy's probe slot is released once its BASIC/EGRESS verdict is in, so a
// target that hangs holds these slots, never the ones the fleet's BASIC probes need; and a check that finds
// no slot free within its wait budget is not run at all rather than queued without end.
import { setTimeout as delay } from 'node:timers/promises';

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). */
export type Timer = (ms: number, signal: AbortSignal) => Promise<void>;

export const realTimer: Timer = (ms, signal) =>
  delay(ms, undefined, { signal }).then(
    () => {},
    () => {},
  );

export class SlotPool {
  #free: number;
  /** Callers waiting for a slot, oldest first (a Set: a caller whose wait expires leaves in O(1)). */
  readonly #waiting = new Set<() => void>();

  constructor(
    readonly size: number,
    private readonly timer: Timer = realTimer,
  ) {
    this.#free = size;
  }

  /** Runs `fn` in a slot; returns `skipped` without running it when no slot frees up within `maxWaitMs`. */
  async run<T>(fn: () => Promise<T>, maxWaitMs: number): Promise<{ ran: true; value: T } | { ran: false }> {
    if (!(await this.#acquire(maxWaitMs))) return { ran: false };
    try {
      return { ran: true, value: await fn() };
    } finally {
      this.#release();
    }
  }

  #acquire(maxWaitMs: number): Promise<boolean> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const expiry = new AbortController();
      const grant = () => {
        expiry.abort();
        resolve(true);
      };
      this.#waiting.add(grant);
      void this.timer(maxWaitMs, expiry.signal).then(() => {
        // Granted meanwhile (the abort ended the timer): the slot is already this caller's.
        if (this.#waiting.delete(grant)) resolve(false);
      });
    });
  }

  #release(): void {
    const next = this.#waiting.values().next();
    if (next.done) {
      this.#free++;
      return;
    }
    // Handed straight to the oldest waiter: #free never counts a slot someone is waiting for.
    this.#waiting.delete(next.value);
    next.value();
  }
}
