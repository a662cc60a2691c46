// Ownership of gateway-pool proxies (contract §4; brief invariant 4): one owner at a time, assigned by
// rendezvous hashing over live workers, held under a lease (expiresAt) that the controller renews while
// the owner lives. A proxy moves only when
//   - its owner is gone and its lease has lapsed (a crashed worker may still be using it until then), or
//   - its live owner has drained it: the proxy left the owner's snapshot (drain started at epoch E) and a
//     valid report at epoch ≥ E shows zero active and reserved for it.
// The global ownership epoch rises on every change of who owns what, including the start of a drain.
import { rendezvousOwner } from './rendezvous.js';

export interface OwnershipRecord {
  proxy: string;
  owner: string | null;
  expiresAt: Date | null;
  /** Set while the owner is being asked to let go: the epoch at which the proxy left its snapshot. */
  drainEpoch: number | null;
}

export interface PlanInput {
  /** Proxies that should be in the gateway pool now. */
  pool: readonly string[];
  records: ReadonlyMap<string, OwnershipRecord>;
  liveWorkers: readonly string[];
  epoch: number;
  /** True when `worker` has a valid report at epoch ≥ `sinceEpoch` with zero counts for `proxy`. */
  drained(proxy: string, worker: string, sinceEpoch: number): boolean;
  now: Date;
  leaseMs: number;
  /** Renew a live owner's lease when less than this remains (fewer writes than renewing every tick). */
  renewBeforeMs: number;
}

export interface OwnershipPlan {
  epoch: number;
  /** Records to write (changed or renewed); a record with owner null and no drain is deleted. */
  writes: OwnershipRecord[];
}

export function planOwnership(x: PlanInput): OwnershipPlan {
  const inPool = new Set(x.pool);
  const names = new Set([...x.pool, ...x.records.keys()]);
  let bumped = false;
  const epochIfBumped = x.epoch + 1;
  const writes: OwnershipRecord[] = [];
  const lease = () => new Date(x.now.getTime() + x.leaseMs);
  for (const proxy of [...names].sort()) {
    const r = x.records.get(proxy) ?? { proxy, owner: null, expiresAt: null, drainEpoch: null };
    const desired = inPool.has(proxy) ? rendezvousOwner(proxy, x.liveWorkers) : null;
    const lapsed = !r.expiresAt || r.expiresAt.getTime() <= x.now.getTime();
    if (r.owner === null) {
      if (desired) {
        writes.push({ proxy, owner: desired, expiresAt: lease(), drainEpoch: null });
        bumped = true;
      }
      continue;
    }
    if (r.owner === desired) {
      if (r.drainEpoch !== null) {
        // Back in the pool before the drain finished: keep the owner, stop draining.
        writes.push({ ...r, drainEpoch: null, expiresAt: lease() });
        bumped = true;
      } else if (!lapsed && r.expiresAt!.getTime() - x.now.getTime() < x.renewBeforeMs) {
        writes.push({ ...r, expiresAt: lease() });
      } else if (lapsed) {
        // The owner is live and still wanted, but its lease ran out (the controller was down): re-grant.
        writes.push({ ...r, expiresAt: lease() });
        bumped = true;
      }
      continue;
    }
    const ownerLive = x.liveWorkers.includes(r.owner);
    const released =
      lapsed || (ownerLive && r.drainEpoch !== null && x.drained(proxy, r.owner, r.drainEpoch));
    if (released) {
      writes.push({ proxy, owner: desired, expiresAt: desired ? lease() : null, drainEpoch: null });
      bumped = true;
    } else if (ownerLive && r.drainEpoch === null) {
      writes.push({ ...r, drainEpoch: epochIfBumped });
      bumped = true;
    }
    // Dead owner, lease not lapsed: wait. Never two owners.
  }
  return { epoch: bumped ? epochIfBumped : x.epoch, writes };
}

/** Proxies a worker may see in its snapshot: owned, lease valid, not draining. */
export function ownedBy(worker: string, records: Iterable<OwnershipRecord>, now: Date): OwnershipRecord[] {
  const out: OwnershipRecord[] = [];
  for (const r of records) {
    if (r.owner === worker && r.drainEpoch === null && r.expiresAt && r.expiresAt.getTime() > now.getTime())
      out.push(r);
  }
  return out;
}
