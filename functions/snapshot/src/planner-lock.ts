// The planner lock while a pass holds it: taken for a short lifetime (lockMs, 30 s) and extended from a
// heartbeat while the pass runs, up to lockHoldMs (the function's timeout + 10 s) after it was taken. Held
// for the whole 130 s from the start, a lock left by a pass whose instance died kept the two ticks after
// it (one a minute) busy: the next renewal came four minutes after the last, past every gateway's max
// stale age (150 s) and its grant (180 s), and the whole fleet stopped serving. The cap keeps a pass that
// runs on past its timeout (on Cloud Run a timed-out request's code may) from holding it for ever.
// An extension is preconditioned on the version this pass's last write left (or, when a write of the
// pass's own landed unanswered, on the version read while the lock still names it), and never runs beside the
// pass's observe-and-commit (exclusive: a few seconds, within the first lifetime), whose commits are
// preconditioned on that version too. A save or a header patch is refused once the lock is another's (the
// snapshot store's guard), so a lost lock costs no safety; once an extension is refused, or none got
// through before the lock lapsed, the pass stops writing all the same, and the steps it has not started
// are failed, to be asked for again.
import type { OwnershipStore } from '../../../shared/src/ports/workers-ownership.js';
import type { SnapshotPassDeps } from './deps.js';

/** The one call the heartbeat makes besides those of OwnershipStore. */
export interface PlannerLockExtension {
  /**
   * Moves the expiry of the lock `holder` holds to `until` if it is still `holder`'s (the state at `token`,
   * or moved on only by this pass's own write that landed unanswered): the new version, or null when the
   * lock is no longer its own (it lapsed and another pass took it).
   */
  extendLock(holder: string, token: string, until: Date): Promise<string | null>;
}

type LockDeps = Pick<SnapshotPassDeps, 'clock' | 'log' | 'lockMs' | 'lockHoldMs'> & {
  ownership: Pick<OwnershipStore, 'releaseLock'> & PlannerLockExtension;
};

export class HeldLock {
  /** The state document's version as this pass last wrote it (the lock, a commit, an extension). */
  token: string;
  /** An extension was refused, or none got through before the lock lapsed: another pass may hold it. */
  lost = false;
  private until: number;
  private readonly holdUntil: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** The extension or the exclusive work running, and whatever was queued behind it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: LockDeps,
    readonly holder: string,
    token: string,
    lockedAt: Date,
  ) {
    this.token = token;
    this.until = lockedAt.getTime() + deps.lockMs;
    this.holdUntil = lockedAt.getTime() + (deps.lockHoldMs ?? deps.lockMs);
    this.schedule();
  }

  /** Runs `work` (the ownership commits: each moves the state's version) with no extension beside it. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => {});
    return run;
  }

  /**
   * Stops the heartbeat (an extension in flight is waited for) and gives the lock up. A release that fails
   * (UNAVAILABLE, DEADLINE_EXCEEDED) is logged, not thrown: the pass's work is done and stored, and a lock
   * not given back lapses on its own within `lockMs` — thrown from the pass's `finally`, it failed a tick
   * that did everything, or had a pass request done again.
   */
  async release(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.queue;
    try {
      await this.deps.ownership.releaseLock(this.holder, this.token);
    } catch (err) {
      this.deps.log.warn('the planner lock could not be given back: it lapses on its own', {
        event: 'gateway.planner_lock_release_failed',
        holder: this.holder,
        until: new Date(this.until),
        error: err,
      });
    }
  }

  // A third of the lifetime: two beats may fail or come late before the lock lapses.
  private schedule(): void {
    if (this.stopped || this.lost || this.until >= this.holdUntil) return;
    this.timer = setTimeout(() => {
      this.queue = this.queue.then(() => this.extend()).then(() => this.schedule());
    }, this.deps.lockMs / 3);
  }

  private async extend(): Promise<void> {
    if (this.stopped) return;
    const until = Math.min(this.deps.clock.now().getTime() + this.deps.lockMs, this.holdUntil);
    try {
      const token = await this.deps.ownership.extendLock(this.holder, this.token, new Date(until));
      if (token !== null) {
        this.token = token;
        this.until = until;
        return;
      }
      this.giveUp('the planner lock was taken by another pass');
    } catch (err) {
      // A failed call (UNAVAILABLE, DEADLINE_EXCEEDED) leaves the lock this pass's until it lapses: given up
      // on the first one, the pass failed every step not yet started while the lock stayed its own 20 s more.
      if (this.deps.clock.now().getTime() >= this.until) {
        this.giveUp('the planner lock lapsed before an extension got through', err);
        return;
      }
      this.deps.log.warn('the planner lock could not be extended: the next beat tries again', {
        event: 'gateway.planner_lock_extend_failed',
        holder: this.holder,
        until: new Date(this.until),
        error: err,
      });
    }
  }

  private giveUp(why: string, error?: unknown): void {
    this.lost = true;
    this.deps.log.warn(`${why}: the pass stops writing`, {
      event: 'gateway.planner_lock_lost',
      holder: this.holder,
      error,
    });
  }
}
