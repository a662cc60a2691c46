// The gateway control plane's stores (workers, ownership, snapshots, the pool, routing, reclaims) bound
// each Firestore call when given a deadline — the API gives one (functions/api/src/workers/wiring.ts): a
// Firestore that takes a call and never answers held a gateway's register, ACK or snapshot fetch (and the
// admin routes the CLI calls) for the client's 300 s per attempt, where a 503 unavailable + Retry-After
// serves a retry. The functions give none: their runs have a timeout of their own. Inside a worker call the
// bound is also cut to what is left of the call's budget (boundFirestoreCall → budgeted, deadline.ts).
//
// A call given up runs on, unheard: a write given up is an unknown outcome (it may still land), so it is
// WorkerStoreError('unavailable'), never 'conflict' — each store's write says how a retry meets a late
// landing.
import { WorkerStoreError } from '../../ports/workers.js';
import { boundFirestoreCall } from '../deadline.js';

export interface WorkerStoreDeadlines {
  /**
   * The longest one Firestore call (a read, a query, a write, a transaction, the check of a write's mark)
   * may take before it is given up as WorkerStoreError('unavailable'). Unset: no bound but the client's own.
   */
  callDeadlineMs?: number;
  /** The same for an unpaged listing (a query over a whole collection or pool); defaults to callDeadlineMs. */
  listDeadlineMs?: number;
}

/** `call`, given up at `ms` (when set) as WorkerStoreError('unavailable'): boundFirestoreCall. */
export function boundedCall<T>(
  ms: number | undefined,
  what: string,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return boundFirestoreCall(ms, what, call, (message) => new WorkerStoreError('unavailable', message));
}

/** The bound of one call and of one unpaged listing, from a store's options. */
export function deadlinesOf(o: WorkerStoreDeadlines): { call?: number; list?: number } {
  return { call: o.callDeadlineMs, list: o.listDeadlineMs ?? o.callDeadlineMs };
}
