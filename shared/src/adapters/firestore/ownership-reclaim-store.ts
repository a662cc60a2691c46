// reclaims/{proxy}: a request to take a gateway-pool proxy out of the pool for an exclusive lease (drain,
// clear ownership, then leasable) until `until`. Written by the admin API only; the planner reads the
// unexpired ones each pass, and the lease service's ownership view follows them. `expireAt` is the TTL field; reads compare `until` to now.
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import type { Reclaim, ReclaimStore } from '../../ports/workers-ownership.js';
import { Collections } from './collections.js';
import { codeOf, NOT_FOUND, workerStoreFailure } from './worker-errors.js';

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

export class FirestoreReclaimStore implements ReclaimStore {
  constructor(private readonly db: Firestore) {}

  private col() {
    return this.db.collection(Collections.reclaims);
  }

  async list(now: Date): Promise<Reclaim[]> {
    try {
      const snaps = await this.col().where('until', '>', Timestamp.fromDate(now)).get();
      return snaps.docs.flatMap((d) => {
        const r = ReclaimDoc.safeParse(d.data());
        return r.success ? [r.data] : [];
      });
    } catch (err) {
      throw workerStoreFailure(err, 'list reclaims');
    }
  }

  async put(r: Reclaim): Promise<void> {
    try {
      await this.col()
        .doc(r.proxy)
        .set({
          proxy: r.proxy,
          uid: r.uid,
          requestedAt: Timestamp.fromDate(r.requestedAt),
          requestedBy: r.requestedBy,
          until: Timestamp.fromDate(r.until),
          [RECLAIM_TTL_FIELD]: Timestamp.fromDate(r.until),
        });
    } catch (err) {
      throw workerStoreFailure(err, `reclaim ${r.proxy}`);
    }
  }

  async delete(proxy: string): Promise<boolean> {
    try {
      // The precondition makes Firestore say whether there was one (NOT_FOUND), in the same single write.
      await this.col().doc(proxy).delete({ exists: true });
      return true;
    } catch (err) {
      if (codeOf(err) === NOT_FOUND) return false;
      throw workerStoreFailure(err, `drop the reclaim of ${proxy}`);
    }
  }
}
