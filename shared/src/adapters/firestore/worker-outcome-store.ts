// workerOutcomes/{workerId}__{sessionId}__{sequence}: one accepted outcome batch, tallied per proxy
// (`proxies.<name>.{ok, dial, proxyHandshake, responseHeaders, tunnel, latencyMsSum}`), with a TTL field
// (Terraform declares the policy; reads never rely on it). The API writes them (worker-store.ts, in the
// same batch as the session's outcome sequence); the probe reads a window of them for its passive track.
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
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
    receivedAt: Timestamp.fromDate(b.receivedAt),
    proxies: Object.fromEntries(b.tallies),
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
  receivedAt: z.instanceof(Timestamp).transform((t) => t.toDate()),
  proxies: z.record(z.string(), Tally),
});

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
