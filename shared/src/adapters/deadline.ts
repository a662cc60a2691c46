import { AsyncLocalStorage } from 'node:async_hooks';
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
 * One Firestore call, given up at `ms` — or sooner, at the end of the request budget it runs in (budgeted)
 * — (unset or null, outside a budget: the call as is, bounded by the client alone) with
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
  return withinBudget(ms, () => call(givenUp.signal), {
    // A transaction not begun writes nothing.
    spent: () => toError(`${what}: not sent, the request's time budget is spent`),
    timeout: (bound) => {
      const of =
        ms === undefined || ms === null || bound < ms ? " (what was left of the request's budget)" : '';
      const err = toError(`${what}: no answer from Firestore within ${Math.ceil(bound)} ms${of}`);
      givenUp.abort(err);
      return err;
    },
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

/** A request's end on a monotonic clock (performance.now by default: immune to wall-clock steps). */
interface RequestBudget {
  endsAt: number;
  monotonicNow: () => number;
}

const requestBudget = new AsyncLocalStorage<RequestBudget>();

/**
 * `work` run with a budget of `ms` from now: every bound taken inside it — its async continuations
 * included — through budgeted() (each Firestore call of boundFirestoreCall, and the calls that ask for it)
 * ends by then. Per-call bounds alone let calls made in a row add up past a caller's own timeout. A budget
 * inside another never ends after the outer one.
 */
export function withRequestBudget<T>(
  ms: number,
  work: () => T,
  monotonicNow: () => number = () => performance.now(),
): T {
  const outer = requestBudget.getStore();
  const endsAt = Math.min(monotonicNow() + ms, outer ? outer.endsAt : Number.POSITIVE_INFINITY);
  return requestBudget.run({ endsAt, monotonicNow }, work);
}

/**
 * Less than this left of a request's budget counts as spent: a call sent with a few milliseconds would be
 * given up at once, and a write given up may still land — an unknown outcome made more common for nothing.
 */
export const BUDGET_FLOOR_MS = 50;

/**
 * A call's bound `ms` (unset or null: none of its own) cut to what is left of the request budget the caller
 * runs in (withRequestBudget), 0 once it is spent (less than BUDGET_FLOOR_MS left); outside a budget `ms` as
 * given (null when unset).
 */
export function budgeted(ms: number | undefined | null): number | null {
  const own = ms ?? null;
  const budget = requestBudget.getStore();
  if (!budget) return own;
  const rest = budget.endsAt - budget.monotonicNow();
  const left = rest < BUDGET_FLOOR_MS ? 0 : rest;
  return own === null ? left : Math.min(own, left);
}

/**
 * One call bounded by `ms` (unset or null: none of its own) cut to what is left of the request budget it
 * runs in (budgeted) — the one place each budgeted call (boundFirestoreCall, the subscription ensure, the
 * pass request) decides how long it may wait: with no bound at all, `start(null)` as is; with the budget
 * spent, it is not started — `spent()`'s error; otherwise `start(bound)`, given up at `bound` with
 * `timeout(bound)`'s error (the call runs on, unheard, as with withDeadline).
 */
export function withinBudget<T>(
  ms: number | undefined | null,
  start: (bound: number | null) => Promise<T>,
  errors: { spent: () => Error; timeout: (bound: number) => Error },
): Promise<T> {
  const bound = budgeted(ms);
  if (bound === null) return start(null);
  if (bound <= 0) return Promise.reject(errors.spent());
  return withDeadline(start(bound), bound, () => errors.timeout(bound));
}
