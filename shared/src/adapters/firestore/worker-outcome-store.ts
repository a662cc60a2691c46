// workerOutcomes/{workerId}__{sessionId}__{sequence}: one accepted outcome batch, tallied per proxy
// (`proxies.<name>.{ok, dial, proxyHandshake, responseHeaders, tunnel, latencyMsSum}`), with a TTL field
// (Terraform declares the policy; reads never rely on it). The API writes them (worker-store.ts, in the
// same batch as the session's outcome sequence); the probe reads a window of them for its passive track.
//
// `receivedAt` is Firestore's commit time (a server timestamp), not the API's clock: the probe consumes
// (cursor, now - settle], and a batch stamped before a commit that took longer than the settle delay would
// land behind a cursor that had already moved past it. With the commit time, a batch becomes readable at
// the instant it is stamped, and the settle delay only has to cover the skew between the probe's clock and
// Firestore's. Nothing reads it back on the write path (the API answers from its own request).
import {
  type DocumentData,
  FieldValue,
  type Firestore,
  type QueryDocumentSnapshot,
  Timestamp,
} from '@google-cloud/firestore';
import { z } from 'zod';
import { storedFields } from '../../domain/stored-issues.js';
import type { OutcomeTally } from '../../domain/workers/outcomes.js';
import type { OutcomeBatchRecord, OutcomeReader } from '../../ports/workers.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { Collections } from './collections.js';
import { workerStoreFailure } from './worker-errors.js';

/** How long a batch is kept: the probe reads the batches of the last tick, well inside this. */
export const OUTCOME_RETENTION_MS = 3600_000;
export const OUTCOME_TTL_FIELD = 'expireAt';

export const outcomeBatchDocId = (b: Pick<OutcomeBatchRecord, 'workerId' | 'sessionId' | 'sequence'>) =>
  `${b.workerId}__${b.sessionId}__${b.sequence}`;

export function outcomeBatchToFirestore(b: OutcomeBatchRecord): DocumentData {
  return {
    workerId: b.workerId,
    sessionId: b.sessionId,
    sequence: b.sequence,
    receivedAt: FieldValue.serverTimestamp(),
    proxies: Object.fromEntries(b.tallies),
    // The API's clock is close enough for a deletion that is itself only approximate.
    [OUTCOME_TTL_FIELD]: Timestamp.fromMillis(b.receivedAt.getTime() + OUTCOME_RETENTION_MS),
  };
}

const count = z.number().int().min(0);
const Tally = z.object({
  ok: count,
  dial: count,
  proxyHandshake: count,
  responseHeaders: count,
  tunnel: count,
  latencyMsSum: count,
});
const BatchDoc = z.object({
  workerId: z.string(),
  sessionId: z.string(),
  sequence: z.number().int(),
  receivedAt: z.instanceof(Timestamp).transform(ceilToMillis),
  proxies: z.record(z.string(), Tally),
});

/**
 * A commit time has microseconds; a Date, and so the probe's cursor, has milliseconds. Rounding UP keeps the
 * reader consistent with its query: a batch at 12:00:00.123456 is outside (…, .123] and inside (…, .124],
 * and a cursor set to its rounded time (passive-window.ts) excludes it from the next window, never re-reads it.
 */
export function ceilToMillis(t: Timestamp): Date {
  return new Date(t.seconds * 1000 + Math.ceil(t.nanoseconds / 1e6));
}

/** The batch, or the field paths (never their values) that do not fit: the reader logs which ones. */
export type OutcomeBatchRead = { batch: OutcomeBatchRecord } | { fields: string[] };

export function readOutcomeBatch(data: DocumentData | undefined): OutcomeBatchRead {
  const parsed = BatchDoc.safeParse(data);
  if (!parsed.success) return { fields: storedFields(parsed.error) };
  const { proxies, ...rest } = parsed.data;
  return { batch: { ...rest, tallies: new Map<string, OutcomeTally>(Object.entries(proxies)) } };
}

export function outcomeBatchFromFirestore(data: DocumentData | undefined): OutcomeBatchRecord | null {
  const read = readOutcomeBatch(data);
  return 'batch' in read ? read.batch : null;
}

export class FirestoreOutcomeReader implements OutcomeReader {
  private readonly log: Logger;

  constructor(
    private readonly db: Firestore,
    opts: { log?: Logger } = {},
  ) {
    this.log = opts.log ?? jsonLogger({ component: 'outcome-reader' });
  }

  async between(from: Date, to: Date): Promise<OutcomeBatchRecord[]> {
    try {
      const snaps = await this.db
        .collection(Collections.workerOutcomes)
        .where('receivedAt', '>', Timestamp.fromDate(from))
        .where('receivedAt', '<=', Timestamp.fromDate(to))
        .orderBy('receivedAt')
        .get();
      return snaps.docs.flatMap((d) => this.readable(d));
    } catch (err) {
      throw workerStoreFailure(err, 'read outcome batches');
    }
  }

  /**
   * A batch edited out of shape is left out, never silently: the passive cursor moves past its window, so
   * its outcomes are never counted, and only this line says so. By field paths, never their values.
   */
  private readable(d: QueryDocumentSnapshot): OutcomeBatchRecord[] {
    const read = readOutcomeBatch(d.data());
    if ('batch' in read) return [read.batch];
    this.log.warn('outcome batch does not fit the model: its outcomes are left out of the passive track', {
      event: 'passive.outcome_batch_invalid',
      batch: d.id,
      fields: read.fields,
    });
    return [];
  }
}
