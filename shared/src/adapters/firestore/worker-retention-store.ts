// WorkerRetentionStore on Firestore: deletes what is stored for a worker past retention — workers/{id},
// snapshots/{id} with snapshots/{id}/parts/*, and workerOutcomes/{id}__* — decided by
// domain/workers/retention.ts on documents re-read in the deleting transaction. Firestore's TTL policies
// are not used for this: a TTL cannot ask whether the planner still names the worker as an owner or
// whether the epoch has moved past its header, it leaves subcollections (the parts) behind, and the
// emulator never runs it (the local plane would keep every worker).
//
// The one write the snapshot function makes on workers/*: a delete, in a transaction that read the
// document, so an API write in between (a registration, a report; each preconditioned on the update time
// it read) either comes first and is seen here (nothing deleted), or comes after and finds the document
// gone (NOT_FOUND: a conflict, re-read as "no worker": the worker registers anew).
//
// The subscription retention's cursor is cursors/worker-subscriptions, {endedAt, workerId}: the last
// session end whose snapshot subscription was dealt with (functions/snapshot/src/subscription-retention.ts).
import {
  type DocumentSnapshot,
  FieldPath,
  type Firestore,
  type QueryDocumentSnapshot,
  Timestamp,
} from '@google-cloud/firestore';
import type { RetentionDecision } from '../../domain/workers/retention.js';
import { WorkerStoreError } from '../../ports/workers.js';
import type {
  RetentionCandidates,
  RetentionSweepResult,
  SessionEnd,
  StoredFacts,
  WorkerRetentionStore,
} from '../../ports/workers-retention.js';
import { Collections } from './collections.js';
import { workerStoreFailure } from './worker-errors.js';

const PARTS = 'parts';
const SUBSCRIPTION_CURSOR = 'worker-subscriptions';
/**
 * Outcome batches deleted per worker per call (one batched write). A worker with more (the emulator runs
 * no TTL, so a local worker keeps every batch) keeps its document until the next call, which finds it again.
 */
export const OUTCOME_DELETE_PAGE = 400;
/**
 * Documents of each range query looked at per call while passing over workers out of shape: more of them
 * than this (each logged every tick) would hold the batch again.
 */
export const CANDIDATE_SCAN_LIMIT = 500;
/** A transaction deletes the header, its parts and the worker document: Firestore's 500 writes per commit. */
const MAX_WRITES = 500;

interface Read {
  facts: StoredFacts;
  parts: number;
  workerExists: boolean;
}

const tsOf = (v: unknown): Date | null => (v instanceof Timestamp ? v.toDate() : null);

/** The facts of one worker as stored, or the fields (never their values) that do not fit the model. */
function readOf(worker: DocumentSnapshot, header: DocumentSnapshot): Read | { invalid: string[] } {
  const invalid: string[] = [];
  let sessionValidUntil: Date | null = null;
  if (worker.exists) {
    sessionValidUntil = tsOf(worker.get('validUntil'));
    if (!sessionValidUntil) invalid.push('worker.validUntil');
  }
  let h: StoredFacts['header'] = null;
  let parts = 0;
  if (header.exists) {
    const validUntil = tsOf(header.get('validUntil'));
    const granted = header.get('grantedUntil');
    const epoch = header.get('ownershipEpoch');
    const n = header.get('parts');
    if (!validUntil) invalid.push('header.validUntil');
    if (granted !== null && !(granted instanceof Timestamp)) invalid.push('header.grantedUntil');
    if (!Number.isInteger(epoch)) invalid.push('header.ownershipEpoch');
    if (!Number.isInteger(n) || n < 0) invalid.push('header.parts');
    if (validUntil) h = { validUntil, grantedUntil: tsOf(granted), ownershipEpoch: epoch as number };
    parts = n as number;
  }
  if (invalid.length > 0) return { invalid };
  return { facts: { sessionValidUntil, header: h }, parts, workerExists: worker.exists };
}

/** The facts of one worker as stored; throws WorkerStoreError `invalid` for a document edited out of shape. */
function factsOf(worker: DocumentSnapshot, header: DocumentSnapshot): Read {
  const read = readOf(worker, header);
  if ('invalid' in read) {
    throw new WorkerStoreError('invalid', `worker ${worker.id}: ${read.invalid.join(', ')} out of shape`);
  }
  return read;
}

export class FirestoreWorkerRetentionStore implements WorkerRetentionStore {
  constructor(
    private readonly db: Firestore,
    private readonly outcomePage = OUTCOME_DELETE_PAGE,
    private readonly scanLimit = CANDIDATE_SCAN_LIMIT,
  ) {}

  private worker(id: string) {
    return this.db.collection(Collections.workers).doc(id);
  }

  private header(id: string) {
    return this.db.collection(Collections.snapshots).doc(id);
  }

  // Two single-field range queries (automatic indexes; terraform/firestore.tf keeps both fields indexed),
  // read a page of `limit` at a time: worker documents first (a header whose worker is gone waits for a
  // batch with room left). Each page's workers are read whole (document and header) and a worker either of
  // whose documents is out of shape is passed over, so that however many of them sort first, the batch
  // still reaches the others. At most `scanLimit` documents of each query are looked at per call.
  async candidates(cutoff: Date, limit: number): Promise<RetentionCandidates> {
    const before = Timestamp.fromDate(cutoff);
    const out: RetentionCandidates = { ids: [], invalid: [] };
    const seen = new Set<string>();
    try {
      for (const collection of [Collections.workers, Collections.snapshots]) {
        let after: QueryDocumentSnapshot | undefined;
        for (let scanned = 0; out.ids.length < limit && scanned < this.scanLimit; ) {
          let query = this.db.collection(collection).where('validUntil', '<', before).orderBy('validUntil');
          if (after) query = query.startAfter(after);
          const page = await query.limit(limit).get();
          scanned += page.size;
          const fresh = page.docs.map((d) => d.id).filter((id) => !seen.has(id));
          for (const id of fresh) seen.add(id);
          if (fresh.length > 0) {
            const docs = await this.db.getAll(...fresh.flatMap((id) => [this.worker(id), this.header(id)]));
            fresh.forEach((workerId, i) => {
              const read = readOf(docs[2 * i]!, docs[2 * i + 1]!);
              if ('invalid' in read) out.invalid.push({ workerId, fields: read.invalid });
              else out.ids.push(workerId);
            });
          }
          if (page.size < limit) break;
          after = page.docs[page.size - 1];
        }
      }
    } catch (err) {
      throw workerStoreFailure(err, 'list workers past retention');
    }
    return { ids: out.ids.slice(0, limit), invalid: out.invalid };
  }

  async remove(
    workerIds: readonly string[],
    cutoff: Date,
    decide: (workerId: string, stored: StoredFacts) => RetentionDecision,
  ): Promise<RetentionSweepResult> {
    const out: RetentionSweepResult = { removed: [], kept: [], failed: [] };
    for (const id of workerIds) {
      try {
        // A first look outside the transaction: the outcome batches go before the worker document (which
        // is how the next call finds a worker whose batches did not all fit in one page).
        const [w, h] = await this.db.getAll(this.worker(id), this.header(id));
        const first = factsOf(w!, h!);
        const d = decide(id, first.facts);
        if (d.kind === 'keep') {
          out.kept.push({ workerId: id, reason: d.reason });
          continue;
        }
        let outcomeBatches = 0;
        if (first.workerExists) {
          const o = await this.deleteOutcomes(id, cutoff);
          outcomeBatches = o.deleted;
          if (o.more) {
            out.removed.push({ workerId: id, worker: false, header: false, parts: 0, outcomeBatches });
            continue;
          }
        }
        const done = await this.removeOne(id, decide);
        if (done.kind === 'keep') out.kept.push({ workerId: id, reason: done.reason });
        else out.removed.push({ ...done.removed, outcomeBatches });
      } catch (err) {
        out.failed.push({ workerId: id, kind: workerStoreFailure(err, `remove worker ${id}`).kind });
      }
    }
    return out;
  }

  // One range query on validUntil (its automatic index; ordered by it, then by the document id, which
  // every index holds last), so ties at the same instant page by id and none is skipped.
  async sessionsEnded(after: SessionEnd | Date, before: Date, limit: number): Promise<SessionEnd[]> {
    try {
      let query = this.db
        .collection(Collections.workers)
        .where('validUntil', '<', Timestamp.fromDate(before))
        .orderBy('validUntil')
        .orderBy(FieldPath.documentId());
      query =
        after instanceof Date
          ? query.where('validUntil', '>', Timestamp.fromDate(after))
          : query.startAfter(Timestamp.fromDate(after.endedAt), after.workerId);
      const page = await query.limit(limit).get();
      return page.docs.map((d) => ({ workerId: d.id, endedAt: (d.get('validUntil') as Timestamp).toDate() }));
    } catch (err) {
      throw workerStoreFailure(err, 'list ended sessions');
    }
  }

  private cursor() {
    return this.db.collection(Collections.cursors).doc(SUBSCRIPTION_CURSOR);
  }

  async subscriptionCursor(): Promise<SessionEnd | null> {
    let snap: DocumentSnapshot;
    try {
      snap = await this.cursor().get();
    } catch (err) {
      throw workerStoreFailure(err, `read ${Collections.cursors}/${SUBSCRIPTION_CURSOR}`);
    }
    if (!snap.exists) return null;
    const endedAt = tsOf(snap.get('endedAt'));
    const workerId = snap.get('workerId');
    // Edited out of shape: started again from the oldest subscription that can still exist.
    if (!endedAt || typeof workerId !== 'string' || workerId === '') return null;
    return { workerId, endedAt };
  }

  // A plain write: two ticks running the retention at once both delete the same subscriptions (the second
  // finds them gone), and one that writes an older cursor last only has the next tick do that again.
  async saveSubscriptionCursor(c: SessionEnd): Promise<void> {
    try {
      await this.cursor().set({ endedAt: Timestamp.fromDate(c.endedAt), workerId: c.workerId });
    } catch (err) {
      throw workerStoreFailure(err, `write ${Collections.cursors}/${SUBSCRIPTION_CURSOR}`);
    }
  }

  /** Deletes one page of the worker's outcome batches received before `cutoff`. */
  private async deleteOutcomes(id: string, cutoff: Date): Promise<{ deleted: number; more: boolean }> {
    // Equality on workerId alone (a single-field index); the cutoff is checked here, not in the query, so
    // no composite index is needed. A batch received after the cutoff (a session of the same id that
    // came back) is left alone; the transaction then sees that session and keeps the worker.
    const page = await this.db
      .collection(Collections.workerOutcomes)
      .where('workerId', '==', id)
      .limit(this.outcomePage)
      .get();
    const old = page.docs.filter((d) => {
      const at = tsOf(d.get('receivedAt'));
      return at !== null && at.getTime() < cutoff.getTime();
    });
    if (old.length > 0) {
      const b = this.db.batch();
      for (const d of old) b.delete(d.ref);
      await b.commit();
    }
    return { deleted: old.length, more: page.size === this.outcomePage };
  }

  private removeOne(
    id: string,
    decide: (workerId: string, stored: StoredFacts) => RetentionDecision,
  ): Promise<
    | { kind: 'keep'; reason: string }
    | { kind: 'removed'; removed: { workerId: string; worker: boolean; header: boolean; parts: number } }
  > {
    return this.db.runTransaction(async (tx) => {
      const [w, h] = await tx.getAll(this.worker(id), this.header(id));
      const read = factsOf(w!, h!);
      const d = decide(id, read.facts);
      if (d.kind === 'keep') return { kind: 'keep' as const, reason: d.reason };
      const header = d.header && read.facts.header !== null;
      if (header && read.parts + 2 > MAX_WRITES) {
        throw new WorkerStoreError('rejected', `snapshots/${id} has too many parts for one commit`);
      }
      if (read.workerExists) tx.delete(this.worker(id));
      if (header) {
        for (let i = 0; i < read.parts; i++) tx.delete(this.header(id).collection(PARTS).doc(String(i)));
        tx.delete(this.header(id));
      }
      return {
        kind: 'removed' as const,
        removed: { workerId: id, worker: read.workerExists, header, parts: header ? read.parts : 0 },
      };
    });
  }
}
