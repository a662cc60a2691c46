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
import { type DocumentData, FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import type { OutcomeTally } from '../../domain/workers/outcomes.js';
import type { OutcomeBatchRecord, OutcomeReader } from '../../ports/workers.js';
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

export function outcomeBatchFromFirestore(data: DocumentData | undefined): OutcomeBatchRecord | null {
  const parsed = BatchDoc.safeParse(data);
  if (!parsed.success) return null;
  const { proxies, ...rest } = parsed.data;
  return { ...rest, tallies: new Map<string, OutcomeTally>(Object.entries(proxies)) };
}

export class FirestoreOutcomeReader implements OutcomeReader {
  constructor(private readonly db: Firestore) {}

  async between(from: Date, to: Date): Promise<OutcomeBatchRecord[]> {
    try {
      const snaps = await this.db
        .collection(Collections.workerOutcomes)
        .where('receivedAt', '>', Timestamp.fromDate(from))
        .where('receivedAt', '<=', Timestamp.fromDate(to))
        .orderBy('receivedAt')
        .get();
      return snaps.docs.flatMap((d) => {
        const b = outcomeBatchFromFirestore(d.data());
        return b ? [b] : [];
      });
    } catch (err) {
      throw workerStoreFailure(err, 'read outcome batches');
    }
  }
}
