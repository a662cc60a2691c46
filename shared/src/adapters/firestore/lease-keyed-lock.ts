// Serialises this replica's writes to one proxy's lease state. Not needed for correctness (the
// lastUpdateTime precondition is), but without it concurrent requests in one process would all write
// from the same base and all but one would fail their precondition and re-read.
import { withDeadline } from '../deadline.js';

/** How long a task may wait for its turn, and the error it throws when its turn has not come by then. */
export interface WaitDeadline {
  ms: number;
  error: () => Error;
}

export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * Runs `fn` once the tasks queued before it on `key` are done. With `wait`, a task whose turn has not
   * come within `wait.ms` throws `wait.error()` without running: bounding each holder's calls alone, the
   * k-th task queued behind a stalled store still waited k of those bounds.
   */
  async run<T>(key: string, fn: () => Promise<T>, wait?: WaitDeadline): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    const forget = () => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    try {
      await (wait ? withDeadline(previous, wait.ms, wait.error) : previous);
    } catch (err) {
      // Given up: its turn passes straight on when it comes, so those queued behind it still wait for the
      // tasks ahead of it. Its tail is forgotten only then, or a task arriving meanwhile would not wait.
      release();
      void tail.then(forget);
      throw err;
    }
    try {
      return await fn();
    } finally {
      release();
      forget();
    }
  }
}

/** In-flight attempts per key: counted as leases when ranking so that concurrent requests spread out. */
export class PendingCounter {
  private readonly counts = new Map<string, number>();
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  async around<T>(key: string, fn: () => Promise<T>): Promise<T> {
    this.counts.set(key, this.get(key) + 1);
    try {
      return await fn();
    } finally {
      const n = this.get(key) - 1;
      if (n > 0) this.counts.set(key, n);
      else this.counts.delete(key);
    }
  }
}
