import type { Clock } from '../ports/clock.js';

// A bound on a call that cannot be cancelled (a REST client's promise, a Secret Manager read): its
// promise, or `timeout()`'s error once `ms` have passed. The call itself runs on; a late answer is left
// to whoever still holds the promise (dropped, or cached by the caller). The timer is unref'd: a bound
// never keeps a process alive on its own.
export function withDeadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeout()), ms);
    timer.unref?.();
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/**
 * One Firestore call, given up at `ms` (unset or null: the call as is, bounded by the client alone) with
 * `toError`'s error for "`what`: no answer from Firestore within `ms` ms" — each store passes its own error
 * class. The call runs on, unheard. `signal` is aborted when the deadline fires: a transaction body checks
 * it at its top and again after its last read, before it stages a write (throwIfGivenUp) — the client
 * re-runs a body (ABORTED, UNAVAILABLE…) after the caller was answered, and a read may answer late: a body
 * given up must not write; only a commit already sent can still land.
 */
export function boundFirestoreCall<T>(
  ms: number | undefined | null,
  what: string,
  call: (signal: AbortSignal) => Promise<T>,
  toError: (message: string) => Error,
): Promise<T> {
  const givenUp = new AbortController();
  if (ms === undefined || ms === null) return call(givenUp.signal);
  return withDeadline(call(givenUp.signal), ms, () => {
    const err = toError(`${what}: no answer from Firestore within ${ms} ms`);
    givenUp.abort(err);
    return err;
  });
}

/** For a transaction body: throws once its call was given up (boundFirestoreCall's `signal`). */
export function throwIfGivenUp(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason;
}

/**
 * What an invocation keeps of its timeout after the run's record (a jobRuns write) is given up: its last
 * lines and its answer. gc and requeue wait on their record until this long before their timeout.
 */
export const RECORD_MARGIN_MS = 2_000;

/**
 * withDeadline bounded by an absolute end (`endMs`, in `clock`'s epoch milliseconds) instead of a length:
 * the time left is measured on `clock` when called, 0 once the end has passed. `timeout` is given that
 * time left, for its message.
 */
export function withDeadlineAt<T>(
  work: Promise<T>,
  endMs: number,
  clock: Clock,
  timeout: (ms: number) => Error,
): Promise<T> {
  const ms = Math.max(0, endMs - clock.now().getTime());
  return withDeadline(work, ms, () => timeout(ms));
}
