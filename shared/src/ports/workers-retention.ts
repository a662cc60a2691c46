// The port of worker retention (domain/workers/retention.ts): finding the workers whose session or
// snapshot ended before a cutoff, and deleting what is stored for one of them after re-reading it.
import type { RetentionDecision, RetentionFacts } from '../domain/workers/retention.js';
import type { WorkerStoreError } from './workers.js';

/** What the store reads of one worker: every fact but ownership (domain/workers/retention.ts). */
export type StoredFacts = Omit<RetentionFacts, 'owns'>;

export interface RemovedWorker {
  workerId: string;
  worker: boolean;
  header: boolean;
  parts: number;
  outcomeBatches: number;
}

export interface RetentionSweepResult {
  removed: RemovedWorker[];
  /** Candidates the decision kept (with its reason), re-read in the transaction. */
  kept: Array<{ workerId: string; reason: string }>;
  failed: Array<{ workerId: string; kind: WorkerStoreError['kind'] }>;
}

export interface WorkerRetentionStore {
  /**
   * The ids of at most `limit` workers whose session ended before `cutoff`, or whose snapshot header's
   * snapshot did (a header whose worker document is gone is found this way), without duplicates. Throws
   * WorkerStoreError when they cannot be listed.
   */
  candidates(cutoff: Date, limit: number): Promise<string[]>;
  /**
   * For each id: re-reads the worker document and the snapshot header in one transaction, asks `decide`
   * (the caller adds what it knows of ownership),
   * and deletes — in that transaction — what it says (the worker document, the header and its parts),
   * after deleting the worker's outcome batches received before `cutoff` when the worker document goes.
   * A document changed meanwhile (a registration, a save) is re-read by the transaction, never deleted
   * on the strength of an old read. Each id costs only itself when it fails. Idempotent.
   */
  remove(
    workerIds: readonly string[],
    cutoff: Date,
    decide: (workerId: string, stored: StoredFacts) => RetentionDecision,
  ): Promise<RetentionSweepResult>;
}
