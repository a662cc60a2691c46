// The ports of ownership (contract §4): the records and the global epoch, changed only by the snapshot
// function under its planner lock and always in one atomic commit; the gateway config (routing, reclaims)
// the admin API writes; and the gate the lease service asks before it leases a gateway-pool proxy.

import type { ProxyInstance } from '../domain/leases/instance.js';
import type { ProxyResource } from '../domain/proxy.js';
import type { OwnershipChange, OwnershipRecord } from '../domain/workers/ownership.js';
import type { RoutingRule } from '../messages/gateway-snapshot.js';

export interface OwnershipState {
  epoch: number;
  records: Map<string, OwnershipRecord>;
  lock: { holder: string; until: Date } | null;
  /** The state document's version (null when it does not exist yet). */
  token: string | null;
}

export interface OwnershipStore {
  /** The current epoch alone (one small read: what every ACK and report is checked against). */
  epoch(): Promise<number>;
  read(): Promise<OwnershipState>;
  /**
   * Takes the planner lock unless another holder has it until after `now`. Returns the state document's
   * version after taking it, or null when someone else holds it (or took it first).
   */
  acquireLock(holder: string, now: Date, until: Date): Promise<string | null>;
  /**
   * Stores the changes and the new epoch in one batch, only if the state is still at `token` (the lock
   * holder's version). An assignment (of a proxy nobody owned) named in `leaseVersions` also claims the
   * proxy on its lease state, in the same batch and only if that state is still at the version read
   * (domain/workers/leasable.ts gatewayClaimSettled): a lease granted since fails the whole commit.
   * Returns the new version. Throws WorkerStoreError `conflict` otherwise.
   *
   * `holdEpoch`: more commits of this same epoch follow (a plan too large for one commit). The records and
   * claims carry `epoch`, but the state document keeps the epoch it has; only the last commit moves it, so
   * a reader that sees the new epoch sees every change made at it (gatewayClaimSettled rests on that).
   */
  commit(
    changes: readonly OwnershipChange[],
    epoch: number,
    token: string,
    now: Date,
    leaseVersions?: ReadonlyMap<string, string | null>,
    options?: { holdEpoch?: boolean },
  ): Promise<string>;
  /**
   * Gives the lock up while it names `holder`: on `token`, or — the state moved on by a write of the
   * holder's own that landed unanswered — on the version read then. A no-op when the lock is another's or
   * free; throws when it stays the holder's (the caller logs it: it lapses on its own).
   */
  releaseLock(holder: string, token: string): Promise<void>;
}

export interface RoutingConfig {
  routes: RoutingRule[];
  updatedAt: Date;
  updatedBy: string;
}

/** The routing as read: later routes of a repeated name dropped and named (domain/snapshots/stored-routing.ts). */
export interface StoredRouting extends RoutingConfig {
  droppedDuplicates: string[];
  /** Bumped by one on every write: the routing's entity tag (If-Match on PUT /v1/gateway/routing). */
  revision: number;
}

/** The revision of a routing never written (the built-in default); a first write makes it 1. */
export const NO_ROUTING_REVISION = 0;

/** What a write did: `written` false when its precondition refused the stored revision (nothing changed). */
export interface RoutingWrite {
  written: boolean;
  /**
   * Not written because the stored routing already is this one (its routes and checks): the revision
   * stands, and nothing is re-planned. Checked after the precondition, which refuses first.
   */
  unchanged?: true;
  /** The revision now stored: the new one, the one the precondition refused, or the unchanged one. */
  revision: number;
}

export interface RoutingStore {
  /** Throws WorkerStoreError `invalid` for a stored routing that no longer fits the route schema. */
  get(): Promise<StoredRouting | null>;
  /** The stored revision alone, read even where `get` finds the document out of shape (to replace it). */
  revision(): Promise<number>;
  /**
   * Replaces the routing and bumps its revision, atomically with reading it: `precondition` (when given)
   * sees the stored revision and may refuse it, and then nothing is written. Refuses (WorkerStoreError
   * `invalid`) routes that do not fit the wire schema (RoutingRules).
   */
  put(config: RoutingConfig, precondition?: (revision: number) => boolean): Promise<RoutingWrite>;
}

export interface Reclaim {
  proxy: string;
  /** The uid of the proxy it was asked for: a namesake created later is not reclaimed by it. Null on a
   *  reclaim stored before the uid was recorded (it reclaims whatever proxy has the name). */
  uid: string | null;
  requestedAt: Date;
  requestedBy: string;
  until: Date;
}

/** A reclaim takes a gateway-pool proxy out of the pool (drain, then no owner) until it expires. */
export interface ReclaimStore {
  list(now: Date): Promise<Reclaim[]>;
  put(reclaim: Reclaim): Promise<void>;
  /** True when there was a reclaim to delete. */
  delete(proxy: string): Promise<boolean>;
}

/** What LeaseActivity read: the proxies with active leases, and the version of every state it read. */
export interface LeaseReading {
  /** Names of the proxies asked about whose own instance has active leases. */
  leased: Set<string>;
  /**
   * Each asked proxy's lease-state version as read (null: no state document). OwnershipStore.commit
   * preconditions an assignment on it, so a lease granted after this read fails the assignment.
   */
  versions: Map<string, string | null>;
}

/** Which proxies have active leases right now (an unowned pool proxy with leases is not assigned yet). */
export interface LeaseActivity {
  /**
   * Only the leases of each proxy's own instance count (domain/leases/capacity.ts isLeased): not those of
   * a deleted proxy of the same name, which can no longer be renewed.
   */
  leased(proxies: readonly ProxyInstance[], now: Date): Promise<LeaseReading>;
}

/**
 * What the lease service asks before it leases a proxy (contract §4 step 4: only a proxy without an owner
 * may be extracted): false for a proxy in the gateway pool (unless reclaimed) or still owned by a worker.
 */
export interface OwnershipGate {
  /** False until the views have loaded (fail closed). */
  leasable(proxy: ProxyResource): boolean;
  /**
   * Whether the view has caught up with the planner's claim of epoch `claimEpoch` on the proxy and shows
   * it released since (domain/workers/leasable.ts gatewayClaimSettled). False until the view has loaded.
   * With the uid of the proxy asked about, a record the view holds for another proxy of that name (one
   * deleted since: ownership.ts OwnershipRecord.uid) is none of its: a view at the claim's epoch or later
   * that holds it was made after any assignment of this proxy, which would be in the view instead.
   */
  claimSettled(proxy: string, claimEpoch: number, uid?: string): boolean;
  /**
   * Whether the views have loaded and follow Firestore now: false while a listener is re-subscribing after
   * an error. `leasable` then refuses pool proxies (fail closed) — a refusal that means "not known", not
   * "held by the gateway".
   */
  following(): boolean;
  /** Resolves once the views have loaded; rejects after `timeoutMs` (default: waits as long as it takes). */
  ready(timeoutMs?: number): Promise<void>;
}
