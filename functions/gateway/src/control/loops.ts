// The small pieces the session's background work is made of: an abortable sleep, a single-flight loop
// that a caller "kicks" — one run at a time, and a kick during a run asks for exactly one more run, so a
// burst of triggers (snapshots arriving, refusals) never starts parallel retries of the same work — and
// a retry loop's backoff that a new session starts over.
import { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';

/** Resolves after `ms`, or at once when any of `signals` aborts (never rejects). */
export function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  if (signals.some((s) => s.aborted)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of signals) s.addEventListener('abort', done, { once: true });
  });
}

/**
 * The backoff of a loop that calls on the session (ACKs, full-snapshot fetches). Its steps and the wait
 * under way were grown by one session's refusals: a new session (newSession) starts the steps over and
 * ends the wait, so the loop goes round at once under it — the ACK the new session needs (no bound, no
 * report to keep it alive until then) would otherwise wait out up to the whole cap, past its TTL. Never a
 * tight loop: only a granted session ends a wait, and the next refusal waits the first step again.
 */
export class SessionBackoff extends Backoff {
  private wake = new AbortController();

  /** Resolves after `ms`, at once when `signal` aborts or a new session begins (never rejects). */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return sleep(ms, signal, this.wake.signal);
  }

  newSession(): void {
    this.reset();
    this.wake.abort();
    this.wake = new AbortController();
  }
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
