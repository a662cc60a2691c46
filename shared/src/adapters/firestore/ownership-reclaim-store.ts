// reclaims/{proxy}: a request to take a gateway-pool proxy out of the pool for an exclusive lease (drain,
// clear ownership, then leasable) until `until`. Written by the admin API only; the planner reads the
// unexpired ones each pass, and the lease service's ownership view follows them. `expireAt` is the TTL field; reads compare `until` to now.
import {
  type DocumentData,
  type Firestore,
  type QueryDocumentSnapshot,
  Timestamp,
} from '@google-cloud/firestore';
import { z } from 'zod';
import { storedFields } from '../../domain/stored-issues.js';
import type { Reclaim, ReclaimStore } from '../../ports/workers-ownership.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { Collections } from './collections.js';
import { boundedCall, deadlinesOf, type WorkerStoreDeadlines } from './worker-deadline.js';
import { workerStoreFailure } from './worker-errors.js';

/** Terraform declares the TTL policy on it (terraform/firestore.tf ttl_fields). */
export const RECLAIM_TTL_FIELD = 'expireAt';

const ts = z.instanceof(Timestamp).transform((t) => t.toDate());
/** A stored reclaim as both readers take it (the planner here, the lease service's ownership-gate.ts). */
export const ReclaimDoc = z.object({
  proxy: z.string(),
  uid: z
    .string()
    .nullish()
    .transform((u) => u ?? null),
  requestedAt: ts,
  requestedBy: z.string(),
  until: ts,
});

/** The reclaim, or the field paths (never their values) that do not fit: the reader logs which ones. */
export type ReclaimRead = { reclaim: Reclaim } | { fields: string[] };

export function readReclaim(data: DocumentData | undefined): ReclaimRead {
  const parsed = ReclaimDoc.safeParse(data);
  if (parsed.success) return { reclaim: parsed.data };
  return { fields: storedFields(parsed.error) };
}

/**
 * One that does not fit is no reclaim, for both readers: its proxy stays in the gateway pool as if none had
 * been asked for, and this line is the only sign of why. The document id is the proxy's name. Field paths
 * only, never their values.
 */
export function logInvalidReclaim(log: Logger, proxy: string, fields: string[]): void {
  log.warn(
    'reclaim document does not fit the model: read as no reclaim; POST the reclaim again or DELETE it',
    {
      event: 'gateway.reclaim_invalid',
      proxy,
      fields,
    },
  );
}

export class FirestoreReclaimStore implements ReclaimStore {
  private readonly log: Logger;
  private readonly deadlines: { call?: number; list?: number };

  /**
   * `opts`: the bound of each call, and of list()'s unpaged query (worker-deadline.ts). A write given up is
   * unavailable, an unknown outcome: put() is a whole-document set, which a retry makes again; a delete()
   * that lands after it was given up leaves the retried one nothing to drop (false: no reclaim).
   */
  constructor(
    private readonly db: Firestore,
    opts: { log?: Logger } & WorkerStoreDeadlines = {},
  ) {
    this.log = opts.log ?? jsonLogger({ component: 'reclaim-store' });
    this.deadlines = deadlinesOf(opts);
  }

  private col() {
    return this.db.collection(Collections.reclaims);
  }

  async list(now: Date): Promise<Reclaim[]> {
    try {
      const query = this.col().where('until', '>', Timestamp.fromDate(now));
      const snaps = await boundedCall(this.deadlines.list, 'list reclaims', () => query.get());
      return snaps.docs.flatMap((d) => this.readable(d));
    } catch (err) {
      throw workerStoreFailure(err, 'list reclaims');
    }
  }

  /** Logged at each listing that meets it: the planner's pass reads them once per pass. */
  private readable(d: QueryDocumentSnapshot): Reclaim[] {
    const read = readReclaim(d.data());
    if ('reclaim' in read) return [read.reclaim];
    logInvalidReclaim(this.log, d.id, read.fields);
    return [];
  }

  async put(r: Reclaim): Promise<void> {
    try {
      await boundedCall(this.deadlines.call, `reclaim ${r.proxy}`, () =>
        this.col()
          .doc(r.proxy)
          .set({
            proxy: r.proxy,
            uid: r.uid,
            requestedAt: Timestamp.fromDate(r.requestedAt),
            requestedBy: r.requestedBy,
            until: Timestamp.fromDate(r.until),
            [RECLAIM_TTL_FIELD]: Timestamp.fromDate(r.until),
          }),
      );
    } catch (err) {
      throw workerStoreFailure(err, `reclaim ${r.proxy}`);
    }
  }

  /**
   * Whether there was one is what a read first saw; the delete after it is a plain one. Preconditioned on
   * `exists`, a delete that landed and lost its answer failed NOT_FOUND on the client's resend (it resends
   * a commit on ABORTED, RESOURCE_EXHAUSTED and UNAVAILABLE), read as none: the admin route asked for no
   * pass. None read: nothing is written, and a reclaim POSTed after the read stands. Two at once may both
   * answer true — two passes, harmless.
   */
  async delete(proxy: string): Promise<boolean> {
    const what = `drop the reclaim of ${proxy}`;
    const ref = this.col().doc(proxy);
    try {
      const seen = await boundedCall(this.deadlines.call, what, () => ref.get());
      if (!seen.exists) return false;
      await boundedCall(this.deadlines.call, what, () => ref.delete());
      return true;
    } catch (err) {
      throw workerStoreFailure(err, what);
    }
  }
}
