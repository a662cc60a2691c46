// Two small pieces the session's background work is made of: an abortable sleep, and a single-flight
// loop that a caller "kicks" — one run at a time, and a kick during a run asks for exactly one more run,
// so a burst of triggers (snapshots arriving, refusals) never starts parallel retries of the same work.

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export class KickLoop {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly body: () => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  get busy(): boolean {
    return this.running !== null;
  }

  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          try {
            await this.body();
          } catch (err) {
            this.onError(err);
          }
        } while (this.again);
      } finally {
        // In the same microtask as the last `again` check: a kick can never fall between the two. (The
        // `await` above guarantees this runs after `this.running` was assigned.)
        this.running = null;
      }
    })();
    return this.running;
  }
}
