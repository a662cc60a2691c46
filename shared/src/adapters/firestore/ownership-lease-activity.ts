// LeaseActivity: which proxies have active leases, read from the lease service's leaseState/{proxy}
// documents (its converter decodes them). Only the entries of the proxy instance asked about count
// (isLeased): a proxy created again under a deleted one's name is not held back by the deleted one's
// leases, which can no longer be renewed; entries stored without a uid count by name. The planner asks
// only about unowned pool proxies it is about to assign, so a pass reads a handful of documents, not the
// fleet. The versions read are what the planner's commit preconditions its claims on (ownership-store.ts).
import type { Firestore } from '@google-cloud/firestore';
import { isLeased } from '../../domain/leases/capacity.js';
import type { ProxyInstance } from '../../domain/leases/instance.js';
import type { LeaseActivity, LeaseReading } from '../../ports/workers-ownership.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { decodeState } from './lease-converter.js';
import { versionOf, workerStoreFailure } from './worker-errors.js';

const BATCH = 300;

export class FirestoreLeaseActivity implements LeaseActivity {
  constructor(private readonly db: Firestore) {}

  async leased(proxies: readonly ProxyInstance[], now: Date): Promise<LeaseReading> {
    const out = new Set<string>();
    const versions = new Map<string, string | null>();
    const uids = new Map(proxies.map((p) => [p.name, p.uid]));
    for (let i = 0; i < proxies.length; i += BATCH) {
      const refs = proxies
        .slice(i, i + BATCH)
        .map((p) => this.db.collection(LEASE_COLLECTIONS.leaseState).doc(p.name));
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
        const uid = uids.get(s.id); // always found: only the proxies asked about are read
        if (entries === null || uid === undefined || isLeased(entries, uid, now)) out.add(s.id);
      }
    }
    return { leased: out, versions };
  }
}
