// The port of worker retention (domain/workers/retention.ts): finding the workers whose session or
// snapshot ended before a cutoff, and deleting what is stored for one of them after re-reading it; and,
// much sooner, finding each worker whose session ended, once, to delete its snapshot subscription.
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

/** A worker whose stored worker document or snapshot header does not fit its model. */
export interface InvalidStoredWorker {
  workerId: string;
  /** The fields that fail, as `worker.<field>` / `header.<field>` paths; never their values. */
  fields: string[];
}

export interface RetentionCandidates {
  /** At most `limit` workers to decide, without duplicates. */
  ids: string[];
  /**
   * Workers past the cutoff passed over because a stored document of theirs does not fit its model
   * (edited by hand): not counted against `limit`, so they cannot hold the batch tick after tick.
   */
  invalid: InvalidStoredWorker[];
}

export interface WorkerRetentionStore {
  /**
   * At most `limit` workers whose session ended before `cutoff`, or whose snapshot header's snapshot did
   * (a header whose worker document is gone is found this way), whose stored documents fit their models;
   * those that do not are passed over and listed apart. Throws WorkerStoreError when they cannot be listed.
   */
  candidates(cutoff: Date, limit: number): Promise<RetentionCandidates>;
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
  /**
   * At most `limit` workers whose session ended after `after` (a cursor: later in time, or at the same
   * instant with a greater id; or an instant) and before `before`, in that order: paging through them with
   * the last one as the next `after` finds each session end once. Throws WorkerStoreError.
   */
  sessionsEnded(after: SessionEnd | Date, before: Date, limit: number): Promise<SessionEnd[]>;
  /** The last session end whose subscription the retention dealt with; null before the first. */
  subscriptionCursor(): Promise<SessionEnd | null>;
  saveSubscriptionCursor(cursor: SessionEnd): Promise<void>;
}

export interface SessionEnd {
  workerId: string;
  endedAt: Date;
}

/** Deletes gateway workers' snapshot subscriptions (functions/snapshot/src/subscription-retention.ts). */
export interface SubscriptionReaper {
  /** Deletes the worker's subscription: false when there was none (already gone). Throws otherwise. */
  remove(workerId: string): Promise<boolean>;
}
