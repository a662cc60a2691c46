// Firestore's TTL policies, which the Firestore emulator does not run: every collection Terraform gives a
// TTL policy (terraform/firestore.tf ttl_fields) loses its documents past their `expireAt` here too, so
// a long `npm start` with traffic does not keep every lease, Idempotency-Key record, cooldown and gateway
// outcome batch it ever wrote (in the emulator's heap and the fleet page's mirror).
//
// Deployed, Firestore deletes such a document "typically within 24 h" after it expires, and nothing relies
// on it for correctness (every read compares the expiry with the clock). Here too a document goes only
// once it has been expired for `graceMs`, and only if it is still the one the sweep read (a precondition
// on its update time): one written again meanwhile — a lease state taking a new lease — stays.
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { LEASE_COLLECTIONS, TTL_FIELD } from '../../shared/src/adapters/firestore/lease-collections.js';
import { RECLAIM_TTL_FIELD } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { OUTCOME_TTL_FIELD } from '../../shared/src/adapters/firestore/worker-outcome-store.js';

/** Each collection with a TTL policy and its field, as terraform/firestore.tf ttl_fields has them
 *  (test/terraform/guardrails.test.ts). */
export const TTL_POLICIES: ReadonlyArray<{ collection: string; field: string }> = [
  ...Object.values(LEASE_COLLECTIONS).map((collection) => ({ collection, field: TTL_FIELD })),
  { collection: Collections.workerOutcomes, field: OUTCOME_TTL_FIELD },
  { collection: Collections.reclaims, field: RECLAIM_TTL_FIELD },
];

const PAGE = 300;
/** Written again since the sweep read it (9), or deleted meanwhile (5): kept, or gone already. */
const RACED = new Set([5, 9]);

/** Deletes what expired `graceMs` before `now`; returns how many documents went. */
export async function sweepExpired(db: Firestore, now: Date, graceMs: number): Promise<number> {
  const before = Timestamp.fromMillis(now.getTime() - graceMs);
  let deleted = 0;
  for (const { collection, field } of TTL_POLICIES) {
    // Bounded: a page each time, stopping at the first page with nothing left to delete.
    for (let page = 0; page < 100; page++) {
      const snap = await db.collection(collection).where(field, '<=', before).limit(PAGE).select().get();
      const gone = await Promise.all(
        snap.docs.map((d) =>
          d.ref.delete({ lastUpdateTime: d.updateTime }).then(
            () => 1,
            (err: { code?: number }) => {
              if (err.code !== undefined && RACED.has(err.code)) return 0;
              throw err;
            },
          ),
        ),
      );
      const n = gone.reduce((a: number, b: number) => a + b, 0);
      deleted += n;
      if (snap.size < PAGE || n === 0) break;
    }
  }
  return deleted;
}

export interface TtlSweeper {
  stop(): Promise<void>;
}

/** Sweeps every `everyMs`, one sweep at a time; a failed sweep is reported and the next one comes anyway. */
export function startTtlSweeper(opts: {
  db: Firestore;
  everyMs: number;
  graceMs: number;
  onError: (err: unknown) => void;
}): TtlSweeper {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    running ??= sweepExpired(opts.db, new Date(), opts.graceMs)
      .then(
        () => {},
        (err) => opts.onError(err),
      )
      .finally(() => {
        running = null;
      });
  }, opts.everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
