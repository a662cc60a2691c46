// What a snapshot pass needs: the ports it observes and acts through, the clock, the settings. Built by
// index.ts (real adapters) or by tests (the same adapters on the emulators).
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import type { Sha256Hex } from '../../../shared/src/domain/gateway/canonical.js';
import type { WorkerSettings } from '../../../shared/src/domain/workers/settings.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { WorkerStore } from '../../../shared/src/ports/workers.js';
import type {
  LeaseActivity,
  OwnershipStore,
  ReclaimStore,
  RoutingStore,
} from '../../../shared/src/ports/workers-ownership.js';
import type {
  SubscriptionReaper,
  WorkerRetentionStore,
} from '../../../shared/src/ports/workers-retention.js';
import type {
  GatewayPoolReader,
  SnapshotPublisher,
  SnapshotStore,
} from '../../../shared/src/ports/workers-snapshots.js';
import type { PlannerLockExtension } from './planner-lock.js';

export interface SnapshotPassDeps {
  pool: GatewayPoolReader;
  ownership: OwnershipStore & PlannerLockExtension;
  workers: Pick<WorkerStore, 'listInView'>;
  snapshots: SnapshotStore;
  routing: Pick<RoutingStore, 'get'>;
  reclaims: Pick<ReclaimStore, 'list'>;
  leases: LeaseActivity;
  publisher: SnapshotPublisher;
  clock: Clock;
  log: Logger;
  settings: WorkerSettings;
  sha256: Sha256Hex;
  /** The planner lock's lifetime as taken or last extended: how long a pass that died holds it. */
  lockMs: number;
  /**
   * How long after taking it a pass extends the lock at most (planner-lock.ts): past the function's timeout,
   * so a pass that runs on past it frees the lock. Without it the lock is never extended.
   */
  lockHoldMs?: number;
  /** The storage sweep (sweep.ts): parts of snapshots whose grant ended `afterMs` ago, `batch` per tick. */
  sweep: { afterMs: number; batch: number };
  /** Worker retention (retention.ts): what is stored for workers gone `afterMs` ago, `batch` per tick. */
  retention: { afterMs: number; batch: number };
  retired: WorkerRetentionStore;
  /**
   * Deletes the snapshot subscription of a worker gone past the view horizon (subscription-retention.ts).
   * The deployed function always has one; a test of the pass that gives none leaves them to Pub/Sub.
   */
  subscriptions?: SubscriptionReaper;
  newHolder(): string;
}
