// The Firestore adapters a snapshot pass observes and acts through: the function's wiring (index.ts) and
// the integration tests build them the same way.
import type { Firestore } from '@google-cloud/firestore';
import { FirestoreLeaseActivity } from '../../../shared/src/adapters/firestore/ownership-lease-activity.js';
import { FirestoreReclaimStore } from '../../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreOwnershipStore } from '../../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreGatewayPoolReader } from '../../../shared/src/adapters/firestore/snapshot-pool-reader.js';
import { FirestoreRoutingStore } from '../../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore } from '../../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerRetentionStore } from '../../../shared/src/adapters/firestore/worker-retention-store.js';
import { FirestoreWorkerStore } from '../../../shared/src/adapters/firestore/worker-store.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { SnapshotPassDeps } from './deps.js';

export type SnapshotStores = Pick<
  SnapshotPassDeps,
  'pool' | 'ownership' | 'workers' | 'snapshots' | 'routing' | 'reclaims' | 'leases' | 'retired'
>;

/** `log`: the pass's own, so a stored document a store has to leave out is logged with the pass's lines. */
export function firestoreStores(db: Firestore, log: Logger): SnapshotStores {
  return {
    pool: new FirestoreGatewayPoolReader(db),
    ownership: new FirestoreOwnershipStore(db),
    workers: new FirestoreWorkerStore(db, { log }),
    snapshots: new FirestoreSnapshotStore(db),
    routing: new FirestoreRoutingStore(db),
    reclaims: new FirestoreReclaimStore(db, { log }),
    leases: new FirestoreLeaseActivity(db),
    retired: new FirestoreWorkerRetentionStore(db),
  };
}
