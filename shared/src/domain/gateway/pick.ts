// Choosing an upstream among a route's candidates. A proxy is usable only before its usableUntil (seed §3:
// "even before expires_at"), while not revoked, and below its capacity. Sticky keys live in a bounded LRU
// table keyed by route and key; a sticky proxy that became unusable is replaced, not waited for.
import type { CompiledRoute, Upstream } from './routing.js';

export const isUsable = <A>(u: Upstream<A>, nowMs: number): boolean =>
  !u.live.revoked && nowMs < u.usableUntilMs && u.live.active + u.live.reserved < u.capacity;

const advance = <A>(route: CompiledRoute<A>, n: number): number => {
  const at = route.cursor % n;
  route.cursor = at + 1;
  return at;
};

/** Fewest active + reserved; ties go round the candidates so equal proxies share the load. */
export function pickLeastActive<A>(route: CompiledRoute<A>, nowMs: number): Upstream<A> | undefined {
  const c = route.candidates;
  const n = c.length;
  if (n === 0) return undefined;
  const start = advance(route, n);
  let best: Upstream<A> | undefined;
  let bestLoad = Number.POSITIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const u = c[(start + i) % n]!;
    const load = u.live.active + u.live.reserved;
    if (load < bestLoad && isUsable(u, nowMs)) {
      best = u;
      bestLoad = load;
      if (load === 0) break;
    }
  }
  return best;
}

export function pickRoundRobin<A>(route: CompiledRoute<A>, nowMs: number): Upstream<A> | undefined {
  const n = route.candidates.length;
  for (let i = 0; i < n; i++) {
    const u = route.candidates[advance(route, n)]!;
    if (isUsable(u, nowMs)) return u;
  }
  return undefined;
}

/** A bounded LRU map from sticky key to proxy name (Map keeps insertion order: oldest first). */
export class StickyTable {
  private readonly entries = new Map<string, string>();
  constructor(readonly maxEntries: number) {}
  get size(): number {
    return this.entries.size;
  }
  get(key: string): string | undefined {
    const name = this.entries.get(key);
    if (name !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, name);
    }
    return name;
  }
  set(key: string, name: string): void {
    this.entries.delete(key);
    this.entries.set(key, name);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }
}

export function pickSticky<A>(
  route: CompiledRoute<A>,
  key: string,
  table: StickyTable,
  nowMs: number,
): Upstream<A> | undefined {
  const tableKey = `${route.name}\n${key}`;
  const pinned = table.get(tableKey);
  const u = pinned === undefined ? undefined : route.byName.get(pinned);
  if (u && isUsable(u, nowMs)) return u;
  const fresh = pickLeastActive(route, nowMs);
  if (fresh) table.set(tableKey, fresh.name);
  return fresh;
}

/**
 * The route's policy applied. A sticky route without a key on this request (the header is absent)
 * falls back to least-active: stickiness is a preference, never a reason to refuse.
 */
export function pickUpstream<A>(
  route: CompiledRoute<A>,
  nowMs: number,
  stickyValue: string | undefined,
  table: StickyTable,
): Upstream<A> | undefined {
  switch (route.policy) {
    case 'round-robin':
      return pickRoundRobin(route, nowMs);
    case 'sticky':
      return stickyValue ? pickSticky(route, stickyValue, table, nowMs) : pickLeastActive(route, nowMs);
    default:
      return pickLeastActive(route, nowMs);
  }
}
