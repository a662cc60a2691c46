// A write's turn on its proxy's lock (FirestoreLeaseStore.writing): how the store's parts ask for one,
// and the refusal when it does not come in time.
import { LeaseStoreError } from '../../ports/lease-store.js';

/** A write whose turn on its proxy's lock did not come in time: unavailable, and nothing was written. */
export class LockWaitError extends LeaseStoreError {}

/**
 * Runs `fn` in its turn among this replica's writes to `proxy`'s state, waiting at most `waitMs` for it
 * (default: the store's LOCK_WAIT_MS); a turn that does not come throws LockWaitError.
 */
export type WriteTurn = <T>(proxy: string, fn: () => Promise<T>, waitMs?: number) => Promise<T>;
