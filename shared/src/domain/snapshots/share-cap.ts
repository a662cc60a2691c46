// Each worker's share of the gateway pool, held within what one snapshot may carry: the wire schema caps a
// snapshot (and a delta's upserts) at MAX_SNAPSHOT_PROXIES entries (messages/gateway-snapshot.ts), and a
// worker's own strict schema refuses anything longer — the publisher refuses it, and so does the worker's
// GET …/snapshot check — so a worker given more would never take another snapshot while its reports kept
// its session and every proxy it owns. The route balance (workers/route-balance.ts) keeps within the cap
// where it can (a full worker gains a route only by a swap, an unowned proxy goes to a worker with room),
// but starts from the current owners, who may already hold more, and gives a proxy no worker has room for
// to its rendezvous owner: this trims its answer, the final guard. Raising the cap is a protocol change
// (older workers refuse a longer snapshot).
//
// A worker past the cap keeps, in order: what it owns and is not draining (in its snapshot now: keeping it
// moves nothing), then what it is draining, then the rest; within each, the proxies that serve before
// those that cannot, then by name. What it does not keep goes to its current owner when that worker may own
// it and has room (a proxy the balance meant to move into a full worker then stays, undrained, where it
// is), else to the eligible worker with room it hashes highest with (rendezvous), else to nobody: an owned
// one then drains — from an owner with no room, whether the balance meant to keep it there or move it — and
// is released through the planner's usual path (workers/ownership.ts), an unowned one stays unowned. Every proxy a
// worker would own counts, serving or not: a proxy turning healthy never pushes a snapshot past the cap,
// and a health flap moves nothing. Pure.
import { MAX_SNAPSHOT_PROXIES } from '../../messages/gateway-snapshot.js';
import { rendezvousOwner } from '../workers/rendezvous.js';

export interface CapProxy {
  name: string;
  /** The workers that may own it (as the balance was given). */
  eligible: readonly string[];
  /** Its ownership record's owner, if any, and whether that owner is draining it. */
  current: string | null;
  draining: boolean;
  /** Whether it can carry traffic now (the balance's `serving`). */
  serving: boolean;
}

export interface ShareCap {
  /** The cap applied: MAX_SNAPSHOT_PROXIES. */
  cap: number;
  /** The workers the balance gave more than the cap, each with that share, by worker id. */
  capped: Array<{ workerId: string; share: number }>;
  /** Proxies given to another worker with room instead. */
  moved: number;
  /** Pool proxies left to no worker: every worker that may own them is full. */
  unassigned: number;
}

/** `desired` (proxy → worker) with no worker given more than `cap` proxies, and what was changed. */
export function capShares(
  desired: ReadonlyMap<string, string | null>,
  proxies: readonly CapProxy[],
  cap: number = MAX_SNAPSHOT_PROXIES,
): { desired: Map<string, string | null>; cap: ShareCap } {
  const out = new Map(desired);
  const share = new Map<string, CapProxy[]>();
  for (const p of proxies) {
    const w = desired.get(p.name);
    if (!w) continue;
    const list = share.get(w);
    if (list) list.push(p);
    else share.set(w, [p]);
  }
  const over = [...share].filter(([, list]) => list.length > cap).sort(([a], [b]) => (a < b ? -1 : 1));
  const result: ShareCap = {
    cap,
    capped: over.map(([workerId, list]) => ({ workerId, share: list.length })),
    moved: 0,
    unassigned: 0,
  };
  if (over.length === 0) return { desired: out, cap: result };
  const rank = (w: string, p: CapProxy) => (p.current !== w ? 4 : p.draining ? 2 : 0) + (p.serving ? 0 : 1);
  const excess: CapProxy[] = [];
  for (const [w, list] of over) {
    const ranked = list
      .map((p) => ({ p, r: rank(w, p) }))
      .sort((a, b) => a.r - b.r || (a.p.name < b.p.name ? -1 : a.p.name > b.p.name ? 1 : 0));
    for (const { p } of ranked.slice(cap)) excess.push(p);
  }
  const room = new Map<string, number>();
  for (const [w, list] of share) room.set(w, Math.max(0, cap - list.length));
  const roomOf = (w: string) => room.get(w) ?? cap;
  excess.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const p of excess) {
    const open = p.eligible.filter((w) => roomOf(w) > 0);
    const to = p.current && open.includes(p.current) ? p.current : rendezvousOwner(p.name, open);
    out.set(p.name, to);
    if (to) {
      room.set(to, roomOf(to) - 1);
      result.moved++;
    } else result.unassigned++;
  }
  return { desired: out, cap: result };
}
