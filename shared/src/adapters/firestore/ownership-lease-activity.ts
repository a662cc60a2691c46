// LeaseActivity: which proxies have active leases, read from the lease service's leaseState/{proxy}
// documents (its converter decodes them). The planner asks only about unowned pool proxies it is about to
// assign, so a pass reads a handful of documents, not the fleet. The versions read are what the planner's
// commit preconditions its claims on (ownership-store.ts).
import type { Firestore } from '@google-cloud/firestore';
import { activeEntries } from '../../domain/leases/capacity.js';
import type { LeaseActivity, LeaseReading } from '../../ports/workers-ownership.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { decodeState } from './lease-converter.js';
import { versionOf, workerStoreFailure } from './worker-errors.js';

const BATCH = 300;

export class FirestoreLeaseActivity implements LeaseActivity {
  constructor(private readonly db: Firestore) {}

  async leased(proxies: readonly string[], now: Date): Promise<LeaseReading> {
    const out = new Set<string>();
    const versions = new Map<string, string | null>();
    for (let i = 0; i < proxies.length; i += BATCH) {
      const refs = proxies
        .slice(i, i + BATCH)
        .map((p) => this.db.collection(LEASE_COLLECTIONS.leaseState).doc(p));
      let snaps: FirebaseFirestore.DocumentSnapshot[];
      try {
        snaps = await this.db.getAll(...refs);
      } catch (err) {
        throw workerStoreFailure(err, 'read lease states');
      }
      for (const s of snaps) {
        versions.set(s.id, s.exists && s.updateTime ? versionOf(s.updateTime) : null);
        if (!s.exists) continue;
        const entries = decodeState(s.data());
        // A state that cannot be read is treated as leased: never hand a proxy to a worker on a guess.
        if (entries === null || activeEntries(entries, now).length > 0) out.add(s.id);
      }
    }
    return { leased: out, versions };
  }
}
