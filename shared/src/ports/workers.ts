// The ports of the gateway control plane's worker side (contract §2, §5): worker sessions with their last
// runtime report, and outcome batches. The API is the only writer of both; the snapshot function only
// deletes them past retention (ports/workers-retention.ts), in a transaction that re-reads them. Writes are
// guarded by the document's last update (an opaque `token`), so two API replicas handling calls of the same
// worker can never interleave a read-check-write (recipes §7: preconditions rather than contended
// transactions), and a write decided on a document deleted since fails as a conflict.

import type { OutcomeTally } from '../domain/workers/outcomes.js';
import type { WorkerSession } from '../domain/workers/session.js';
import type { StoredReport } from '../domain/workers/usable-capacity.js';

export interface WorkerRecord {
  session: WorkerSession;
  /** The last accepted runtime report of `session` (null before the first, or after a new session). */
  report: StoredReport | null;
}

export interface Versioned<T> {
  value: T;
  /** The stored version this value was read at; pass it back to write on top of exactly that. */
  token: string;
}

export interface OutcomeBatchRecord {
  workerId: string;
  sessionId: string;
  sequence: number;
  receivedAt: Date;
  tallies: Map<string, OutcomeTally>;
}

export interface WorkerStore {
  /** null: no document. `value` null: a document that no longer fits (a registration overwrites it). */
  get(workerId: string): Promise<Versioned<WorkerRecord | null> | null>;
  /**
   * Writes the record if the stored one is still at `expected` (null: only if there is none). Throws
   * WorkerStoreError `conflict` when another write came first: re-read and decide again.
   */
  put(record: WorkerRecord, expected: string | null): Promise<void>;
  /**
   * Moves the session's outcome sequence to `sequence` if the stored record is still at `expected`, with
   * the outcome batch when there is one, atomically: the batch is recorded iff the sequence moved. Writes
   * that one field: the last report (up to ~800 KB of counts) is not sent again with every batch.
   */
  putOutcomeSequence(
    workerId: string,
    sequence: number,
    expected: string,
    batch: OutcomeBatchRecord | null,
  ): Promise<void>;
  /**
   * One page of every stored worker document (lapsed ones included, until retention deletes them:
   * domain/workers/retention.ts), in worker-id order after `after` (null: from the start): admin listings
   * only. `next` is the id to pass as `after` for the following page, null after the last one.
   */
  page(after: string | null, limit: number): Promise<{ records: WorkerRecord[]; next: string | null }>;
  /** Workers whose session is valid after `cutoff` (domain/workers/view.ts): what a snapshot pass reads. */
  listInView(cutoff: Date): Promise<WorkerRecord[]>;
}

/** Outcome batches for the probe's passive track (the probe reads; the API writes through WorkerStore). */
export interface OutcomeReader {
  /** Batches received in (from, to], oldest first. */
  between(from: Date, to: Date): Promise<OutcomeBatchRecord[]>;
}

export class WorkerStoreError extends Error {
  constructor(
    /** conflict: a precondition failed (re-read); unavailable: the backend failed (retry later); invalid: a
     *  stored document no longer fits (someone edited it by hand): fix it, retrying will not; rejected: the
     *  backend refused the write itself (Firestore INVALID_ARGUMENT: over 1 MiB, a reserved field name):
     *  the same write fails the same way every time, so it must never be answered "retry". */
    readonly kind: 'conflict' | 'unavailable' | 'invalid' | 'rejected',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WorkerStoreError';
  }
}
