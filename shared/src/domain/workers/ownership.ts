// Ownership of gateway-pool proxies (contract §4; brief invariant 4): one owner at a time, assigned by
// rendezvous hashing over the assignable workers (live sessions that have ACKed a snapshot, are not
// shutting down and are not withheld for owing an ACK: snapshots/plan-pass.ts). A proxy moves away from its owner only when
//   - the owner has drained it: the proxy left the owner's snapshot at epoch E (drainEpoch) and a valid
//     report at an epoch ≥ E shows zero active and reserved for it — or, drain started or not, the owner
//     is shutting down with nothing in flight at all (drain.ts shutDownIdle), or
//   - the owner's grant has lapsed (plus a clock-skew allowance): every snapshot it was ever sent has
//     expired, so it can no longer pick the proxy for a new request (usableUntil ≤ expiresAt = grant).
// The global ownership epoch rises on every change of who owns what, including the start or the
// cancellation of a drain.
//
// Why grants are per worker, not per proxy (a change to the first version of this planner): renewing a
// lease on every proxy document meant one Firestore write per proxy per renewal period (10,000 writes a
// minute at 10,000 proxies). A worker's proxies all expire together at the grant the controller records
// for the worker before it publishes a snapshot, which is one write per worker.
import { rendezvousOwner } from './rendezvous.js';

export interface OwnershipRecord {
  proxy: string;
  owner: string;
  /** The epoch at which this owner got the proxy. */
  since: number;
  /** Set while the owner is being asked to let go: the epoch at which the proxy left its snapshot. */
  drainEpoch: number | null;
  /**
   * The uid of the proxy the owner was given. A proxy deleted and created again under its name is another
   * proxy: the old one's drain runs to its end, and the new one is given out afresh (plan-pass.ts succeeds).
   * Absent on a record stored before it was kept: taken for the proxy of that name.
   */
  uid?: string | null;
}

/** Whether a record is about this proxy (the same uid, or a record that keeps none). */
export const recordOf = (r: Pick<OwnershipRecord, 'uid'>, uid: string): boolean => !r.uid || r.uid === uid;

export interface WorkerStanding {
  /** Live session that has ACKed a snapshot, not shutting down, not withheld: may be given proxies (plan-pass.ts). */
  assignable: boolean;
  /** The latest expiry of any snapshot sent to it; null when it was never sent one. */
  grantedUntil: Date | null;
}

export interface PlanInput {
  /** Proxies that should be in the gateway pool now (gatewayPool, not deleted, not reclaimed). */
  pool: readonly string[];
  records: ReadonlyMap<string, OwnershipRecord>;
  workers: ReadonlyMap<string, WorkerStanding>;
  epoch: number;
  /** An unowned proxy that must not be given to a worker yet (it has active leases). */
  blocked(proxy: string): boolean;
  /**
   * True when `worker` has a valid report (live session, within its TTL) at epoch ≥ `sinceEpoch` with zero
   * counts for `proxy`, or the last report of its current session, shut down with nothing in flight —
   * whatever its epoch or age, live or not (drain.ts drainedAt). Which reports count is decided there.
   */
  drained(proxy: string, worker: string, sinceEpoch: number): boolean;
  now: Date;
  /** A lapsed grant is trusted only this long after it lapsed (the worker's clock may run behind). */
  skewMs: number;
  /**
   * Who each pool proxy should belong to, when the caller has decided it (snapshots/plan-pass.ts balances
   * the routes: workers/route-balance.ts); each must be one of `workers`' assignable ones. Default: plain
   * rendezvous over the assignable workers.
   */
  desired?: ReadonlyMap<string, string | null>;
  /** The uid of each pool proxy, kept in the records that give it out. */
  uidOf?: (proxy: string) => string | undefined;
}

export interface OwnershipChange {
  proxy: string;
  /** The record to store, or null to delete it (no owner). */
  next: OwnershipRecord | null;
  kind: 'assigned' | 'drain_started' | 'drain_cancelled' | 'released';
}

export interface OwnershipPlan {
  epoch: number;
  changes: OwnershipChange[];
}

export function grantLapsed(w: WorkerStanding | undefined, now: Date, skewMs: number): boolean {
  if (!w?.grantedUntil) return true;
  return w.grantedUntil.getTime() + skewMs <= now.getTime();
}

/** The workers that may be given proxies (their standing says assignable), sorted. */
export function assignableWorkers(workers: ReadonlyMap<string, WorkerStanding>): string[] {
  return [...workers.entries()]
    .filter(([, w]) => w.assignable)
    .map(([id]) => id)
    .sort();
}

export function planOwnership(x: PlanInput): OwnershipPlan {
  const inPool = new Set(x.pool);
  const assignable = assignableWorkers(x.workers);
  const ownerFor = x.desired
    ? (proxy: string) => x.desired?.get(proxy) ?? null
    : (proxy: string) => rendezvousOwner(proxy, assignable);
  const next = x.epoch + 1;
  const given = (proxy: string, owner: string): OwnershipRecord => {
    const uid = x.uidOf?.(proxy);
    return { proxy, owner, since: next, drainEpoch: null, ...(uid ? { uid } : {}) };
  };
  const changes: OwnershipChange[] = [];
  for (const proxy of [...new Set([...x.pool, ...x.records.keys()])].sort()) {
    const r = x.records.get(proxy);
    const desired = inPool.has(proxy) ? ownerFor(proxy) : null;
    if (!r) {
      if (desired && !x.blocked(proxy)) {
        changes.push({
          proxy,
          kind: 'assigned',
          next: given(proxy, desired),
        });
      }
      continue;
    }
    if (r.owner === desired) {
      // Back in the pool (or wanted again) before the drain finished: keep the owner, stop draining.
      if (r.drainEpoch !== null)
        changes.push({ proxy, kind: 'drain_cancelled', next: { ...r, drainEpoch: null } });
      continue;
    }
    const owner = x.workers.get(r.owner);
    // Not draining yet, it is drained only by a report no drain epoch can be too recent for (drain.ts: a
    // worker shut down with nothing in flight); no report is ever at `next`. Such a worker has stopped
    // pulling and, idle, sends its last report before this pass runs: a drain started here would wait for
    // a report that never comes, and then for its grant to lapse, the proxy serving no one meanwhile. That
    // report outlives its session (it exits), so liveness is not asked here: `drained` knows which count.
    const drained = x.drained(proxy, r.owner, r.drainEpoch ?? next);
    if (drained || grantLapsed(owner, x.now, x.skewMs)) {
      const taker = desired && !x.blocked(proxy) ? desired : null;
      changes.push({
        proxy,
        kind: 'released',
        next: taker ? given(proxy, taker) : null,
      });
    } else if (r.drainEpoch === null) {
      changes.push({ proxy, kind: 'drain_started', next: { ...r, drainEpoch: next } });
    }
    // Otherwise: draining, not drained yet, grant still valid — wait. Never two owners.
  }
  return { epoch: changes.length > 0 ? next : x.epoch, changes };
}

/**
 * The most changes one commit carries: each is a record in a shard document's map (up to ~500 bytes of
 * request with a 63-character proxy name and a 128-character worker id), and Firestore refuses a commit
 * request over 10 MiB. A pass that moves tens of thousands of proxies at once (a gateway scaled from 6
 * workers to 12 over 96,000 proxies drains 48,000: 11 MiB in one commit) failed that commit on every pass,
 * no snapshot built, until every grant lapsed — and the plan only grew.
 */
export const MAX_CHANGES_PER_COMMIT = 10_000;

/**
 * A plan's changes, in order, as consecutive commits of at most `maxAssignments` assignments each and
 * `maxChanges` changes in all. Each assignment claims its proxy's lease state in the commit (one write
 * apiece), and a store's commit has a bound (Firestore: 500 writes): a pool assigned at once — the first
 * worker to register, a fleet flipped into the pool — must not be one commit that can never succeed; nor
 * may the records of a mass drain or release outgrow the commit request (MAX_CHANGES_PER_COMMIT).
 */
export function commitChunks(
  changes: readonly OwnershipChange[],
  maxAssignments: number,
  maxChanges: number = MAX_CHANGES_PER_COMMIT,
): OwnershipChange[][] {
  const chunks: OwnershipChange[][] = [];
  let current: OwnershipChange[] = [];
  let assigned = 0;
  for (const c of changes) {
    const full = current.length === maxChanges || (c.kind === 'assigned' && assigned === maxAssignments);
    if (full) {
      chunks.push(current);
      current = [];
      assigned = 0;
    }
    if (c.kind === 'assigned') assigned++;
    current.push(c);
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** Applies a plan's changes to the records (a new map). */
export function applyOwnership(
  records: ReadonlyMap<string, OwnershipRecord>,
  changes: readonly OwnershipChange[],
): Map<string, OwnershipRecord> {
  const out = new Map(records);
  for (const c of changes) {
    if (c.next) out.set(c.proxy, c.next);
    else out.delete(c.proxy);
  }
  return out;
}

/**
 * The records by owner, each list in the records' order: a pass builds every worker's snapshot from its
 * own, and scanning all records once per worker was workers × pool (2 M steps at 100 × 10,000).
 */
export function recordsByOwner(records: Iterable<OwnershipRecord>): Map<string, OwnershipRecord[]> {
  const out = new Map<string, OwnershipRecord[]>();
  for (const r of records) {
    const list = out.get(r.owner);
    if (list) list.push(r);
    else out.set(r.owner, [r]);
  }
  return out;
}

/** Proxies a worker may see in its snapshot: owned and not draining. */
export function ownedBy(worker: string, records: Iterable<OwnershipRecord>): OwnershipRecord[] {
  const out: OwnershipRecord[] = [];
  for (const r of records) if (r.owner === worker && r.drainEpoch === null) out.push(r);
  return out;
}

/** Proxies being drained away from a worker, with the epoch each drain started at. */
export function drainingFrom(worker: string, records: Iterable<OwnershipRecord>): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records) if (r.owner === worker && r.drainEpoch !== null) out.set(r.proxy, r.drainEpoch);
  return out;
}
