// Which worker each pool proxy should belong to: rendezvous hashing, then a repair per route so that every
// worker has its share of each route's proxies.
//
// Why: a worker picks only among the proxies it owns, and a crawler behind a load balancer cannot choose
// its worker. Rendezvous alone spreads the whole pool evenly but not each route: with three workers and a
// route that selects three proxies, each worker has a (2/3)^3 ≈ 30 % chance of owning none of them, and
// answers that route's requests `503 no_upstream` while the others have spare capacity.
//
// The repair: a route of K proxies over N workers that may own them asks each of those workers for
// max(1, ⌊K/N⌋) of them (its floor). A worker below a route's floor takes one of that route's proxies
// from another worker, if the giver stays at or above its floor in every route the proxy is in; among
// those it takes the one it hashes highest with (the proxy that would pick it first), so the result is
// deterministic. When no giver can spare one — typically because it sits at exactly its share of the
// default route, which once balanced leaves only K mod N workers above it — the worker swaps: it takes
// the proxy and hands the giver one of its own that is in every route the giver would fall short in, not
// in this route, and whose other routes it keeps its own share of; a worker at the snapshot cap gains
// only by such swaps (share-cap.ts). Each move or swap lowers the total
// shortfall and raises none, so the repair ends; a route whose proxies are fewer than its workers leaves
// some without (nothing could give one without taking the giver's only one).
//
// The repair starts from each proxy's current owner while that worker may keep it (rendezvous for a new
// proxy, or one whose owner left or may no longer own it), so moves happen only where the current
// ownership leaves a shortfall, and with no ownership yet the answer is plain rendezvous wherever that
// leaves none. Started from rendezvous every pass instead, the answer was a function of every route's
// size: one proxy turning unhealthy (or coming back) that took a route's K across a multiple of its
// workers changed that route's floor, and with it the repair's every choice — hundreds of healthy
// proxies drained from one worker to another at 20,000 proxies, and back again when it flapped. From the
// current owners, a proxy that stops carrying traffic stays where it is and leaves nobody else short, and
// one that comes back finds its worker as it was.
//
// No worker is given more than `cap` proxies (what one snapshot may carry: MAX_SNAPSHOT_PROXIES), every
// proxy it would own counting, serving or not, in a route or not. A proxy without an owner who may keep
// it goes to the highest-rendezvous eligible worker with room (those taken in name order), and to plain
// rendezvous only when none has room; a worker at the cap gains a route it lacks only by a swap, handing
// back one of its own — a proxy in no route will do — so its count stays where it is. A plain move into
// it would take it past the cap, and the trim after (snapshots/share-cap.ts) would send that proxy back
// on every pass: the worker would stay short of the route for good while others had room. What the
// balance itself leaves past the cap (owners already over it, a pool larger than the workers' room) is
// that trim's. While no worker reaches the cap none of this changes an answer. Pure.
import { MAX_SNAPSHOT_PROXIES } from '../../messages/gateway-snapshot.js';
import { hash53, rendezvousOwner } from './rendezvous.js';

export interface BalanceProxy {
  name: string;
  attributes: Readonly<Record<string, string>>;
  /**
   * Whether it can carry traffic now (healthy, with an address: only such a proxy is in a snapshot). One
   * that cannot keeps its owner (or gets one by rendezvous), but counts in no route and is never moved for one.
   * A SUSPECT one (Healthy, reason ProbeSuspect/PassiveSuspect) serves: it is in the snapshot and a worker
   * still picks it when it has no sound candidate for a route (gateway/pick.ts). Counting it out would drain
   * proxies between workers on every SUSPECT episode, which often ends without one turning UNHEALTHY.
   */
  serving: boolean;
  /** The workers that may own it, any order (e.g. only those reading SOCKS5 for a SOCKS5 proxy). */
  eligible: readonly string[];
  /**
   * The routes, by name, whose target check keeps failing through it (its status.unreachableRoutes): it
   * counts in none of them, as a worker leaves it out of their candidates — unless that leaves a route
   * with no proxy at all, which then counts them all (the control plane fails such a route open).
   */
  excludedFrom?: readonly string[];
  /**
   * Who owns it now (its ownership record, draining or not), if anyone. The repair starts from this owner
   * while it is eligible, and from rendezvous otherwise: see the header.
   */
  current?: string | null;
}

export interface BalanceRoute {
  /** Matched against the proxies' `excludedFrom`. */
  name?: string;
  selector?: Readonly<Record<string, string>>;
}

/** Proxies of a route a swap is looked for in vain before the worker's turn at that route ends. */
const MAX_SWAP_MISSES = 16;

/** proxy name → worker (null: no worker may own it). */
export function balancedOwners(
  proxies: readonly BalanceProxy[],
  routes: readonly BalanceRoute[],
  cap: number = MAX_SNAPSHOT_PROXIES,
): Map<string, string | null> {
  // Proxies and workers by index: a large pool is repaired with array reads, not map look-ups. Proxies
  // usually share one list of eligible workers (all, or those reading SOCKS5): one set per list.
  const lists = new Set(proxies.map((p) => p.eligible));
  const workers = [...new Set([...lists].flat())].sort();
  const workerIndex = new Map(workers.map((w, i) => [w, i]));
  const byList = new Map<readonly string[], Uint8Array>();
  const eligible = proxies.map((p) => {
    let set = byList.get(p.eligible);
    if (!set) {
      set = new Uint8Array(workers.length);
      for (const w of p.eligible) set[workerIndex.get(w)!] = 1;
      byList.set(p.eligible, set);
    }
    return set;
  });
  // Where the repair starts: the current owner while it may keep the proxy, else rendezvous over the
  // workers with room (in name order: which proxies a worker nearly full takes must not depend on the
  // order given), over all of them when none has any.
  const held = new Int32Array(workers.length);
  const owner = Int32Array.from(proxies, (p, i) => {
    const kept = p.current ? workerIndex.get(p.current) : undefined;
    if (kept === undefined || eligible[i]![kept] !== 1) return -1;
    held[kept]!++;
    return kept;
  });
  const fresh = proxies.flatMap((p, i) => (owner[i]! < 0 && p.eligible.length > 0 ? [i] : []));
  fresh.sort((a, b) =>
    proxies[a]!.name < proxies[b]!.name ? -1 : proxies[a]!.name > proxies[b]!.name ? 1 : 0,
  );
  let full = held.filter((n) => n >= cap).length;
  for (const i of fresh) {
    const all = proxies[i]!.eligible;
    const open = full === 0 ? all : all.filter((w) => held[workerIndex.get(w)!]! < cap);
    const w = workerIndex.get(rendezvousOwner(proxies[i]!.name, open.length > 0 ? open : all)!)!;
    owner[i] = w;
    if (++held[w]! === cap) full++;
  }
  const members = routeMembers(proxies, routes).map((m) => m.filter((i) => owner[i]! >= 0));
  const routesOf: number[][] = proxies.map(() => []);
  members.forEach((m, r) => {
    for (const i of m) routesOf[i]!.push(r);
  });
  const count = members.map((m) => {
    const c = new Int32Array(workers.length);
    for (const i of m) c[owner[i]!]!++;
    return c;
  });
  const workersOf = members.map((m) => {
    const any = new Uint8Array(workers.length);
    for (const i of m) for (let w = 0; w < workers.length; w++) any[w] ||= eligible[i]![w]!;
    return [...any.keys()].filter((w) => any[w] === 1);
  });
  const floor = members.map((m, r) =>
    m.length === 0 ? 0 : Math.max(1, Math.floor(m.length / workersOf[r]!.length)),
  );
  const canGive = (i: number) => routesOf[i]!.every((q) => count[q]![owner[i]!]! - 1 >= floor[q]!);
  // Each worker's proxies (for swaps), kept by move.
  const ownedBy: number[][] = workers.map(() => []);
  /** Whether w holds the cap: it gains a proxy only by handing back one (a swap). */
  const isFull = (w: number) => ownedBy[w]!.length >= cap;
  const slot = new Int32Array(proxies.length);
  owner.forEach((w, i) => {
    if (w < 0) return;
    slot[i] = ownedBy[w]!.length;
    ownedBy[w]!.push(i);
  });
  const move = (i: number, to: number) => {
    const from = owner[i]!;
    for (const q of routesOf[i]!) {
      count[q]![from]!--;
      count[q]![to]!++;
    }
    const list = ownedBy[from]!;
    const last = list.pop()!;
    if (last !== i) {
      list[slot[i]!] = last;
      slot[last] = slot[i]!;
    }
    slot[i] = ownedBy[to]!.length;
    ownedBy[to]!.push(i);
    owner[i] = to;
    surplusOf[from] = null;
    surplusOf[to] = null;
  };
  // Routes over every proxy that counts (the default route, a catch-all): a swap changes no count there.
  const counted = routesOf.filter((q) => q.length > 0).length;
  const universal = members.map((m) => m.length === counted);
  // Per worker, the proxies it could hand back in a swap: in every route of theirs but a universal one
  // above its share, and in some route — or in none, for a worker at the cap, which swaps to gain a route
  // it lacks even where a plain move could. Drawn up again after the worker gains or loses a proxy.
  const surplusOf: (number[] | null)[] = workers.map(() => null);
  const surplus = (w: number) =>
    (surplusOf[w] ??= ownedBy[w]!.filter(
      (j) =>
        (routesOf[j]!.length > 0 || isFull(w)) &&
        routesOf[j]!.every((q) => universal[q] || count[q]![w]! - 1 >= floor[q]!),
    ));
  /** The better of two proxies for `w`: the one it hashes highest with, then the smaller name. */
  const preferred = (w: number, list: readonly number[]) => {
    const score = list.map((i) => hash53(`${workers[w]}\u0000${proxies[i]!.name}`));
    return list
      .map((_, k) => k)
      .sort((a, b) => score[b]! - score[a]! || (proxies[list[a]!]!.name < proxies[list[b]!]!.name ? -1 : 1))
      .map((k) => list[k]!);
  };
  // A swap, when no single move can — or when w is at the cap, where a move would take it over: w takes
  // proxy i of route r from g, whose share of another route q of i would fall short without it, and hands
  // g in exchange one of its own proxies that is in every such q, not in r, and whose other routes w keeps
  // its share of (a full w hands back one in no route first: it costs no route a proxy). Then w gains one
  // in r and no count of g or w falls below its floor where it was not already: the shortfall falls by one.
  const swapIn = (r: number, w: number, above: readonly number[]): boolean => {
    const c = count[r]!;
    const takeable = above.filter(
      (i) => owner[i] !== w && eligible[i]![w] === 1 && c[owner[i]!]! - 1 >= floor[r]!,
    );
    if (takeable.length === 0) return false;
    const spare = surplus(w).filter((j) => !routesOf[j]!.includes(r));
    if (spare.length === 0) return false;
    let any = false;
    let misses = 0;
    for (const i of preferred(w, takeable)) {
      if (c[w]! >= floor[r]! || misses > MAX_SWAP_MISSES) break;
      const g = owner[i]!;
      if (g === w || c[g]! - 1 < floor[r]!) continue;
      const wFull = isFull(w);
      if (canGive(i) && !wFull) {
        move(i, w);
        any = true;
        continue;
      }
      const blocking = routesOf[i]!.filter((q) => count[q]![g]! - 1 < floor[q]!);
      // What w hands back: the smallest name that fits (a fixed rule that costs no hashing) — one in no
      // route first, when w is full: one that serves nothing, or nothing routed, costs no route a proxy.
      // Its owner and w's shares may have changed since spare was drawn up: checked again.
      let back = -1;
      for (const j of spare) {
        if (back >= 0) {
          // Below the cap spare holds routed proxies only: the name alone decides, no route read.
          const routed = wFull && routesOf[j]!.length > 0;
          const backRouted = wFull && routesOf[back]!.length > 0;
          if (routed !== backRouted ? routed : proxies[j]!.name > proxies[back]!.name) continue;
        }
        if (owner[j] !== w || eligible[j]![g] !== 1) continue;
        const rj = routesOf[j]!;
        if (!blocking.every((q) => rj.includes(q))) continue;
        if (rj.every((q) => universal[q] || count[q]![w]! - 1 >= floor[q]!)) back = j;
      }
      if (back < 0) {
        misses++;
        continue;
      }
      move(i, w);
      move(back, g);
      any = true;
    }
    return any;
  };
  // A worker short of a route's floor takes, one at a time, the proxy of that route it hashes highest with
  // among those whose owner can give them; then, if still short, swaps (above). While it takes, only it
  // gains proxies in the route, so a proxy whose owner cannot give it now cannot later in the same turn:
  // the candidates are filtered once per turn, and a turn costs (proxies taken) × (candidates), the
  // shortfall being small. A swap can make a proxy giveable again: the next pass over the routes finds it.
  // Each pass either moves a proxy (the shortfall falls) or ends the repair.
  for (let moved = true; moved; ) {
    moved = false;
    members.forEach((m, r) => {
      const c = count[r]!;
      let givers: number[] | null = null;
      let above: number[] | null = null;
      for (const w of workersOf[r]!) {
        if (c[w]! >= floor[r]!) continue;
        givers = (givers ?? m).filter(canGive);
        const cand = givers.filter((i) => owner[i] !== w && eligible[i]![w] === 1);
        const score = Float64Array.from(cand, (i) => hash53(`${workers[w]}\u0000${proxies[i]!.name}`));
        while (c[w]! < floor[r]! && !isFull(w)) {
          let best = -1;
          for (let k = 0; k < cand.length; k++) {
            if (score[k]! < 0) continue;
            if (best < 0 || score[k]! > score[best]!) best = k;
            else if (score[k] === score[best] && proxies[cand[k]!]!.name < proxies[cand[best]!]!.name)
              best = k;
          }
          if (best < 0) break;
          score[best] = -1;
          if (!canGive(cand[best]!)) continue;
          move(cand[best]!, w);
          moved = true;
        }
        // A swap hands back a proxy outside the route: over every proxy, only one in no route (a full
        // worker's).
        if (c[w]! >= floor[r]! || (universal[r] && !isFull(w))) continue;
        // The proxies of the route whose owner has more than its share of it: only they can be swapped.
        // As givers, they only shrink during the route's turn.
        above = (above ?? m).filter((i) => c[owner[i]!]! - 1 >= floor[r]!);
        if (above.length > 0 && swapIn(r, w, above)) moved = true;
      }
    });
  }
  return new Map(proxies.map((p, i) => [p.name, owner[i]! < 0 ? null : workers[owner[i]!]!]));
}

/**
 * For each route, the indexes of the serving proxies its selector picks (all its key=value pairs match the
 * proxy's attributes; an empty selector picks all) less those excluded from it, unless none would be left: through an index of attribute pairs, so a thousand narrow routes
 * over a large pool cost about the pool once, not once per route.
 */
function routeMembers(proxies: readonly BalanceProxy[], routes: readonly BalanceRoute[]): number[][] {
  const index = new Map<string, number[]>();
  const serving = proxies.flatMap((p, i) => (p.serving ? [i] : []));
  proxies.forEach((p, i) => {
    if (!p.serving) return;
    for (const [k, v] of Object.entries(p.attributes)) {
      const key = `${k}\u0000${v}`;
      const list = index.get(key);
      if (list) list.push(i);
      else index.set(key, [i]);
    }
  });
  const selected = (r: BalanceRoute): number[] => {
    const sel = Object.entries(r.selector ?? {});
    if (sel.length === 0) return serving;
    let smallest: number[] | null = null;
    for (const [k, v] of sel) {
      const list = index.get(`${k}\u0000${v}`) ?? [];
      if (smallest === null || list.length < smallest.length) smallest = list;
    }
    return smallest!.filter((i) => sel.every(([k, v]) => proxies[i]!.attributes[k] === v));
  };
  return routes.map((r) => {
    const all = selected(r);
    const name = r.name;
    if (name === undefined) return all;
    const reachable = all.filter((i) => !proxies[i]!.excludedFrom?.includes(name));
    return reachable.length > 0 ? reachable : all;
  });
}
