// How the probe consumes gateway outcome batches for the PASSIVE track at most once (contract §5: outcomes
// are observations for the reducer). A cursor — the `receivedAt` high-water mark of what was consumed —
// moves in the same atomic commit as the health states those batches changed, and only if no other tick
// moved it first: a duplicate or concurrent tick, on this instance or another, can never count a batch
// twice, and a crash between reading and committing counts it zero times (the next tick reads it again).
// Each health state goes in under its own version too (ports/health-store.ts), in that same commit: an
// active pass of an overlapping invocation that wrote the proxy since it was read fails the whole commit,
// and the cursor stays where it was.
import type { HealthWrite } from './health-store.js';

export interface PassiveCursor {
  /** Every batch received at or before this has been counted. */
  through: Date;
  /** The stored version the cursor was read at; pass it back to commit on top of exactly that. */
  token: string;
  /** Every proxy that may hold a PASSIVE track (a superset: the active pass drops expired tracks without
   *  touching the cursor). A passing signal for a proxy not listed changes nothing and costs no read. */
  tracked: string[];
}

export interface PassiveFeedStore {
  /** null before the first consumption. */
  cursor(): Promise<PassiveCursor | null>;
  /**
   * Writes the health states and moves the cursor to `next`, all or nothing, if the cursor is still at
   * `expected` (null: there is none yet) and every state's document still at its `base`. `conflict`:
   * one of them moved (another tick consumed the window, or another pass wrote one of the proxies) and
   * nothing was written. Throws PassiveFeedError when the store cannot be reached.
   */
  commit(
    writes: HealthWrite[],
    next: Omit<PassiveCursor, 'token'>,
    expected: string | null,
  ): Promise<PassiveCommitResult>;
}

export type PassiveCommitResult = 'committed' | 'conflict';

export class PassiveFeedError extends Error {
  constructor(
    /** unavailable: nothing was written; the next tick reads the window again. */
    readonly kind: 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PassiveFeedError';
  }
}
