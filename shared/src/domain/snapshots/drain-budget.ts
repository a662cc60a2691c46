// No more drains on one worker than its runtime report can carry (contract §4: one owner at a time). A
// report is a complete replacement cut to WORKER_LIMITS.maxCounts entries (draining ones first:
// functions/gateway/src/control/reporting.ts reportedCounts), and a proxy absent from it reads as drained
// (workers/drain.ts): a worker draining more busy proxies than that had the rest released to another
// worker while its own tunnels through them still ran. One pass of the route balance asked for that much
// whenever a worker joined beside one owning more than twice maxCounts (18,000 proxies: 9,000 drains).
//
// Only moves the owner could have kept are held back — the balance's (and the share cap's) choice of a
// better owner for a proxy its owner may still own. A drain its owner cannot avoid starts whatever the
// count: a proxy out of the pool (deleted, reclaimed, no longer gatewayPool) or with no worker to go to
// must stop being used, and one whose owner may no longer own it (withheld, shutting down, a protocol
// that does not read it) must leave. Nor is a move held back that would leave the owner keeping more than
// one snapshot carries (MAX_SNAPSHOT_PROXIES: share-cap.ts): such a worker could take no snapshot at all.
// What is held back stays with its owner, in its snapshot; the next pass's balance starts from the
// current owners, asks for the same moves, and starts them as earlier drains end. Pure.
import { applyOwnership, type OwnershipChange, type OwnershipRecord } from '../workers/ownership.js';

export interface DrainBudget {
  /** The plan's changes, in order. */
  changes: readonly OwnershipChange[];
  /** The records the changes apply to. */
  records: ReadonlyMap<string, OwnershipRecord>;
  /** Whether draining `proxy` away from `owner` is a move the owner could have kept it through. */
  voluntary(proxy: string, owner: string): boolean;
  /** The most proxies one worker may be draining: WORKER_LIMITS.maxCounts. */
  maxDraining: number;
  /** The most proxies one worker's snapshot may carry: MAX_SNAPSHOT_PROXIES. */
  cap: number;
  /** Which of an owner's moves start first when not all may (lower first; then by name): a move that gives
   *  a worker a route it lacks should not wait behind the default route's. */
  priority?(proxy: string): number;
}

/** The changes less the voluntary drains past each owner's budget, and how many were held back. */
export function withinDrainBudget(x: DrainBudget): { changes: OwnershipChange[]; held: number } {
  const started = new Map<string, string[]>();
  for (const c of x.changes) {
    if (c.kind !== 'drain_started' || !c.next || !x.voluntary(c.proxy, c.next.owner)) continue;
    const list = started.get(c.next.owner);
    if (list) list.push(c.proxy);
    else started.set(c.next.owner, [c.proxy]);
  }
  if (started.size === 0) return { changes: [...x.changes], held: 0 };
  // Per owner, as the plan leaves it: draining (existing drains not cancelled or released, and new ones)
  // and kept (owned, not draining: its snapshot).
  const draining = new Map<string, number>();
  const kept = new Map<string, number>();
  for (const r of applyOwnership(x.records, x.changes).values()) {
    const m = r.drainEpoch === null ? kept : draining;
    m.set(r.owner, (m.get(r.owner) ?? 0) + 1);
  }
  const held = new Set<string>();
  for (const [owner, proxies] of started) {
    // With every voluntary drain held back, the owner drains `others` and keeps `keeps`.
    const others = (draining.get(owner) ?? 0) - proxies.length;
    const keeps = (kept.get(owner) ?? 0) + proxies.length;
    const allowed = Math.max(0, x.maxDraining - others, keeps - x.cap);
    if (allowed >= proxies.length) continue;
    const rank = x.priority ?? (() => 0);
    const order = proxies
      .map((p) => ({ p, r: rank(p) }))
      .sort((a, b) => a.r - b.r || (a.p < b.p ? -1 : a.p > b.p ? 1 : 0));
    for (const { p } of order.slice(allowed)) held.add(p);
  }
  return {
    changes: x.changes.filter((c) => c.kind !== 'drain_started' || !held.has(c.proxy)),
    held: held.size,
  };
}
