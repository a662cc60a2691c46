// WorkerStore on Firestore: workers/{workerId}, written only by the API, each write guarded by the
// updateTime it was decided on (recipes §7: preconditions, not contended transactions). An outcome batch
// is stored in the same batched write as the session's new outcome sequence, so a batch is recorded
// exactly when its sequence is accepted.
// Each call is given up at the store's deadline, when it has one (worker-deadline.ts): a write given up is
// unavailable (503), an unknown outcome, never 'conflict'. The gateway's retry reads the document again,
// a late landing included, and decides on it (a register of the same instance resumes its session, an
// ACK or report already recorded is taken as such); a write still decided on the version before the late
// landing fails its lastUpdateTime precondition (conflict: read and decided again, the API's withRetry) — never
// made twice.
import {
  type DocumentSnapshot,
  FieldPath,
  type Firestore,
  type Query,
  type QueryDocumentSnapshot,
  Timestamp,
} from '@google-cloud/firestore';
import type { OutcomeBatchRecord, Versioned, WorkerRecord, WorkerStore } from '../../ports/workers.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { Collections } from './collections.js';
import { readWorkerDoc, workerToFirestore } from './worker-converter.js';
import { boundedCall, deadlinesOf, type WorkerStoreDeadlines } from './worker-deadline.js';
import { requireTimestamp, versionOf, workerStoreFailure } from './worker-errors.js';
import { outcomeBatchDocId, outcomeBatchToFirestore } from './worker-outcome-store.js';

export class FirestoreWorkerStore implements WorkerStore {
  private readonly log: Logger;
  private readonly deadlines: { call?: number; list?: number };

  constructor(
    private readonly db: Firestore,
    opts: { log?: Logger } & WorkerStoreDeadlines = {},
  ) {
    this.log = opts.log ?? jsonLogger({ component: 'worker-store' });
    this.deadlines = deadlinesOf(opts);
  }

  private ref(workerId: string) {
    return this.db.collection(Collections.workers).doc(workerId);
  }

  async get(workerId: string): Promise<Versioned<WorkerRecord | null> | null> {
    let snap: DocumentSnapshot;
    try {
      snap = await boundedCall(this.deadlines.call, `read worker ${workerId}`, () =>
        this.ref(workerId).get(),
      );
    } catch (err) {
      throw workerStoreFailure(err, `read worker ${workerId}`);
    }
    if (!snap.exists) return null;
    // A document that no longer fits reads as no session: the caller is told to register, and that
    // registration replaces it (guarded by this version). Logged as a listing logs it.
    const read = readWorkerDoc(snap.data());
    if ('fields' in read)
      this.warnInvalid(workerId, read.fields, 'read as no session until it registers again');
    return { value: 'record' in read ? read.record : null, token: versionOf(snap.updateTime!) };
  }

  async put(record: WorkerRecord, expected: string | null): Promise<void> {
    const ref = this.ref(record.session.workerId);
    const data = workerToFirestore(record);
    try {
      const what = `write worker ${record.session.workerId}`;
      if (expected === null) await boundedCall(this.deadlines.call, what, () => ref.create(data));
      else {
        const lastUpdateTime = requireTimestamp(expected);
        await boundedCall(this.deadlines.call, what, () => ref.update(data, { lastUpdateTime }));
      }
    } catch (err) {
      throw workerStoreFailure(err, `write worker ${record.session.workerId}`);
    }
  }

  async putOutcomeSequence(
    workerId: string,
    sequence: number,
    expected: string,
    batch: OutcomeBatchRecord | null,
  ): Promise<void> {
    const b = this.db.batch();
    b.update(
      this.ref(workerId),
      { outcomeSequence: sequence },
      { lastUpdateTime: requireTimestamp(expected) },
    );
    if (batch) {
      b.create(
        this.db.collection(Collections.workerOutcomes).doc(outcomeBatchDocId(batch)),
        outcomeBatchToFirestore(batch),
      );
    }
    try {
      await boundedCall(this.deadlines.call, `record outcomes of ${workerId}`, () => b.commit());
    } catch (err) {
      throw workerStoreFailure(err, `record outcomes of ${workerId}`);
    }
  }

  // Ordered by document id (always indexed); one document more than the page tells whether another follows.
  // The cursor is the last document's id, readable or not, so a document edited out of shape is skipped
  // without ending the listing.
  async page(after: string | null, limit: number): Promise<{ records: WorkerRecord[]; next: string | null }> {
    let q = this.db
      .collection(Collections.workers)
      .orderBy(FieldPath.documentId())
      .limit(limit + 1);
    if (after !== null) q = q.startAfter(after);
    try {
      const snaps = await boundedCall(this.deadlines.call, 'list workers', () => q.get());
      const docs = snaps.docs.slice(0, limit);
      return {
        records: docs.flatMap((d) => this.readable(d)),
        next: snaps.size > limit ? docs[docs.length - 1]!.id : null,
      };
    } catch (err) {
      throw workerStoreFailure(err, 'list workers');
    }
  }

  // A single-field range filter: served by Firestore's automatic single-field index, no composite needed.
  listInView(cutoff: Date): Promise<WorkerRecord[]> {
    return this.read(
      this.db.collection(Collections.workers).where('validUntil', '>', Timestamp.fromDate(cutoff)),
    );
  }

  /** An unpaged listing: bounded by the store's listing deadline. */
  private async read(q: Query): Promise<WorkerRecord[]> {
    try {
      const snaps = await boundedCall(this.deadlines.list, 'list workers', () => q.get());
      return snaps.docs.flatMap((d) => this.readable(d));
    } catch (err) {
      throw workerStoreFailure(err, 'list workers');
    }
  }

  /**
   * A listed document edited out of shape is left out, never silently: the planner stops seeing that worker
   * (no proxies assigned to it) and only this line says why. Its next call is told to register, which
   * replaces the document. Logged at each listing that meets it, by field paths, never their values.
   */
  private readable(d: QueryDocumentSnapshot): WorkerRecord[] {
    const read = readWorkerDoc(d.data());
    if ('record' in read) return [read.record];
    this.warnInvalid(d.id, read.fields, 'left out of the workers listed');
    return [];
  }

  private warnInvalid(workerId: string, fields: string[], what: string): void {
    this.log.warn(`worker document does not fit the model: ${what}`, {
      event: 'gateway.worker_invalid',
      workerId,
      fields,
    });
  }
}
