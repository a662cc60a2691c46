// Serialises this replica's writes to one proxy's lease state. Not needed for correctness (the
// lastUpdateTime precondition is), but without it concurrent requests in one process would all write
// from the same base and all but one would fail their precondition and re-read.
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
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
