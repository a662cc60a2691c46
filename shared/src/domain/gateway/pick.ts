// Choosing an upstream among a route's candidates. A proxy is usable only before its usableUntil (seed §3:
// "even before expires_at"), while not revoked, and below its capacity. A SUSPECT one only when no other
// is usable (below). Sticky keys live in a bounded LRU table keyed by route and key; a sticky proxy that
// became unusable is replaced, not waited for; one that became SUSPECT stays while usable (pickSticky).
// `avoid`: a proxy this request has just failed to reach (a refused dial: it sent nothing), never picked
// again for it; a sticky key pinned to it moves, as off any proxy that has become unusable. Matched by
// name, not by object: a snapshot swapped in since the failed pick compiled new entries for the same
// proxies, and the old entry must still keep its proxy out.
import type { CompiledRoute, Upstream } from './routing.js';

export const isUsable = <A>(u: Upstream<A>, nowMs: number): boolean =>
  !u.live.revoked && nowMs < u.usableUntilMs && u.live.active + u.live.reserved < u.capacity;

type Tier = 'sound' | 'suspect';

const avoided = <A>(u: Upstream<A>, avoid: Upstream<A> | undefined): boolean =>
  avoid !== undefined && u.name === avoid.name;

const listOf = <A>(route: CompiledRoute<A>, tier: Tier): readonly Upstream<A>[] =>
  tier === 'sound' ? route.sound : route.suspect;

/** The tier's rotating position, moved one on. */
const advance = <A>(route: CompiledRoute<A>, tier: Tier, n: number): number => {
  if (tier === 'sound') {
    const at = route.cursor % n;
    route.cursor = at + 1;
    return at;
  }
  const at = route.suspectCursor % n;
  route.suspectCursor = at + 1;
  return at;
};

function leastActiveIn<A>(
  route: CompiledRoute<A>,
  tier: Tier,
  nowMs: number,
  avoid: Upstream<A> | undefined,
): Upstream<A> | undefined {
  const c = listOf(route, tier);
  const n = c.length;
  if (n === 0) return undefined;
  const start = (tier === 'sound' ? route.cursor : route.suspectCursor) % n;
  let best: Upstream<A> | undefined;
  let bestAt = 0;
  let bestLoad = Number.POSITIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const at = (start + i) % n;
    const u = c[at]!;
    const load = u.live.active + u.live.reserved;
    if (load < bestLoad && !avoided(u, avoid) && isUsable(u, nowMs)) {
      best = u;
      bestAt = at;
      bestLoad = load;
      if (load === 0) break;
    }
  }
  // The next pick starts past the one chosen, not one past this start: from each start in a run of busy
  // or unusable proxies the scan reached the same first idle one after it, which took (k+1)/n of the
  // picks behind k such proxies (one exit address rate-limited first, new sticky keys piled on it).
  if (best) {
    if (tier === 'sound') route.cursor = bestAt + 1;
    else route.suspectCursor = bestAt + 1;
  }
  return best;
}

function roundRobinIn<A>(
  route: CompiledRoute<A>,
  tier: Tier,
  nowMs: number,
  avoid: Upstream<A> | undefined,
): Upstream<A> | undefined {
  const c = listOf(route, tier);
  const n = c.length;
  for (let i = 0; i < n; i++) {
    const u = c[advance(route, tier, n)]!;
    if (!avoided(u, avoid) && isUsable(u, nowMs)) return u;
  }
  return undefined;
}

// SUSPECT proxies (docs/health.md: Healthy, but started failing) are picked only when no sound candidate
// is usable — none left, all at capacity, past usableUntil or revoked — and then by the same policy among
// themselves: a route whose proxies are all suspect still gets one (fail open, never `no_upstream` for
// it), as lease selection ranks SUSPECT last but still grants it. A route without suspect proxies walks
// one array, as before.

/** Fewest active + reserved; ties go round the candidates so equal proxies share the load. */
export const pickLeastActive = <A>(
  route: CompiledRoute<A>,
  nowMs: number,
  avoid?: Upstream<A>,
): Upstream<A> | undefined =>
  leastActiveIn(route, 'sound', nowMs, avoid) ?? leastActiveIn(route, 'suspect', nowMs, avoid);

export const pickRoundRobin = <A>(
  route: CompiledRoute<A>,
  nowMs: number,
  avoid?: Upstream<A>,
): Upstream<A> | undefined =>
  roundRobinIn(route, 'sound', nowMs, avoid) ?? roundRobinIn(route, 'suspect', nowMs, avoid);

/**
 * A bounded map from sticky key to proxy name, one LRU per owner (the client user whose key it is; Map
 * keeps insertion order: oldest first). Full, it takes the room from the owner holding the most keys —
 * its least recently used one goes: one client user sending a new session value on every request
 * recycles its own keys and never evicts another user's sessions (a single LRU across users let it move
 * every other crawler's sessions to new proxies, their exit IPs with them). Owners are the configured
 * client users, a handful: the scan for the largest is short.
 */
export class StickyTable {
  private readonly owners = new Map<string, Map<string, string>>();
  private total = 0;
  constructor(readonly maxEntries: number) {}
  get size(): number {
    return this.total;
  }
  get(key: string, owner = ''): string | undefined {
    const keys = this.owners.get(owner);
    const name = keys?.get(key);
    if (name !== undefined) {
      keys!.delete(key);
      keys!.set(key, name);
    }
    return name;
  }
  set(key: string, name: string, owner = ''): void {
    let keys = this.owners.get(owner);
    if (!keys) {
      keys = new Map();
      this.owners.set(owner, keys);
    }
    if (keys.delete(key)) this.total--;
    keys.set(key, name);
    this.total++;
    if (this.total > this.maxEntries) this.evictFromLargest();
  }
  private evictFromLargest(): void {
    let largest: [string, Map<string, string>] | undefined;
    for (const entry of this.owners) if (!largest || entry[1].size > largest[1].size) largest = entry;
    if (!largest) return;
    const [owner, keys] = largest;
    const oldest = keys.keys().next();
    if (oldest.done) return;
    keys.delete(oldest.value);
    this.total--;
    if (keys.size === 0) this.owners.delete(owner);
  }
}

/**
 * A header's sticky key as the table holds it: the client's user name and the value, so that one client
 * user sending another's session value neither lands on that user's proxy nor moves its session (by
 * filling the proxy) — keys are per client user, as pins are. An empty value is no key (least-active).
 */
export const headerStickyKey = (user: string, value: string | undefined): string | undefined =>
  value === undefined || value === '' ? undefined : `${user}\n${value}`;

export function pickSticky<A>(
  route: CompiledRoute<A>,
  key: string,
  table: StickyTable,
  nowMs: number,
  avoid?: Upstream<A>,
  owner = '',
): Upstream<A> | undefined {
  const tableKey = `${route.name}\n${key}`;
  const pinned = table.get(tableKey, owner);
  const u = pinned === undefined ? undefined : route.byName.get(pinned);
  // A key pinned to a proxy that has turned SUSPECT stays on it while it is usable: moving a crawler's
  // session changes its exit IP mid-session, which costs more than a proxy that has only started failing
  // (an UNHEALTHY one leaves the snapshot and the key moves then). A new key prefers a sound proxy.
  if (u && !avoided(u, avoid) && isUsable(u, nowMs)) return u;
  const fresh = pickLeastActive(route, nowMs, avoid);
  if (fresh) table.set(tableKey, fresh.name, owner);
  return fresh;
}

/**
 * The route's policy applied. A sticky route without a key on this request (the header is absent)
 * falls back to least-active: stickiness is a preference, never a reason to refuse. `owner`: the client
 * user the sticky key belongs to (its share of the table: StickyTable).
 */
export function pickUpstream<A>(
  route: CompiledRoute<A>,
  nowMs: number,
  stickyValue: string | undefined,
  table: StickyTable,
  avoid?: Upstream<A>,
  owner = '',
): Upstream<A> | undefined {
  switch (route.policy) {
    case 'round-robin':
      return pickRoundRobin(route, nowMs, avoid);
    case 'sticky':
      return stickyValue
        ? pickSticky(route, stickyValue, table, nowMs, avoid, owner)
        : pickLeastActive(route, nowMs, avoid);
    default:
      return pickLeastActive(route, nowMs, avoid);
  }
}
