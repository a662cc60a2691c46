// The routing table a worker compiles from a snapshot, off the hot path: routes in order, each with its
// candidate proxies (selector applied once), and host indexes so that matching a request's host costs
// a few map look-ups instead of a scan (first matching route wins, as the seed's ordered Routing says).
import type { GatewayRoute, RoutingPolicy, StickyKey } from '../../messages/gateway-snapshot.js';
import type { DrainMark } from './drain-bound.js';
import { canonicalIpv6, isNoDnsName, parseIpv4, parseIpv6 } from './ip.js';
import { drain, SLICE_ITEMS, type Sliced } from './slices.js';

/** Per-proxy live counts: they outlive snapshot swaps, so they sit outside the immutable table. */
export interface LiveCounters {
  /** Requests past the upstream handshake. */
  active: number;
  /** Requests that picked the proxy and are dialling or handshaking. */
  reserved: number;
  /** revokeProxyIds: no new request may pick it, whatever the snapshot says. */
  revoked: boolean;
  /** The proxy's drain away from this worker (drain-bound.ts), kept by the worker's tick. */
  drainingSinceMs: DrainMark['drainingSinceMs'];
  /** The drain outlived GATEWAY_PROXY_DRAIN_TIMEOUT_MS: the listener's sweep cuts what is open on it. */
  cut: boolean;
}

/** A proxy's counters as first seen: nothing open, not revoked, not draining. */
export const newLiveCounters = (active = 0, reserved = 0, revoked = false): LiveCounters => ({
  active,
  reserved,
  revoked,
  drainingSinceMs: null,
  cut: false,
});

export interface Upstream<A> {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly capacity: number;
  readonly usableUntilMs: number;
  readonly expiresAtMs: number;
  readonly attributes: Readonly<Record<string, string>>;
  /**
   * The routes that must not pick the proxy (snapshot entry's excludedRoutes: their target check fails
   * through it, contract §6 TARGET tier). Read only when the table is compiled, never per request.
   */
  readonly excludedRoutes?: readonly string[] | undefined;
  /**
   * The health verdict is SUSPECT (snapshot entry's `suspect`, protocol 5): still usable, but a route
   * picks it only when none of its other candidates is usable (docs/health.md). Read only at compile time.
   */
  readonly suspect?: boolean | undefined;
  readonly live: LiveCounters;
  /** Whatever the worker needs to talk to the proxy (its pre-computed auth header). */
  readonly auth: A;
}

export interface CompiledRoute<A> {
  readonly name: string;
  readonly policy: RoutingPolicy;
  readonly stickyKey: StickyKey | undefined;
  /** Every proxy the route may pick, suspect or not. */
  readonly candidates: readonly Upstream<A>[];
  /** The candidates not SUSPECT, in candidate order: picked first (the same array as `candidates` when
   *  none is suspect). */
  readonly sound: readonly Upstream<A>[];
  /** The SUSPECT candidates, in candidate order: picked only when no sound one is usable (fail open). */
  readonly suspect: readonly Upstream<A>[];
  readonly byName: ReadonlyMap<string, Upstream<A>>;
  /** Round-robin / tie-break position over `sound`: mutable, carried over by each swap (carryCursors). */
  cursor: number;
  /** The same over `suspect`, so falling through to them rotates as well. */
  suspectCursor: number;
}

export interface RoutingTable<A> {
  readonly routes: readonly CompiledRoute<A>[];
  readonly exact: ReadonlyMap<string, number>;
  /** ".example.com" → the first route listing "*.example.com". */
  readonly suffix: ReadonlyMap<string, number>;
  /** Index of the first route listing "*", or -1. */
  readonly catchAll: number;
}

export const selects = (
  selector: Readonly<Record<string, string>>,
  attrs: Readonly<Record<string, string>>,
) => Object.entries(selector).every(([k, v]) => attrs[k] === v);

export function compileRouting<A>(
  routes: readonly GatewayRoute[],
  proxies: readonly Upstream<A>[],
): RoutingTable<A> {
  return drain(compileRoutingSlices(routes, proxies));
}

/**
 * compileRouting(), yielding between routes once SLICE_ITEMS × 4 selector checks have run since the last
 * yield (slices.ts): a table is routes × proxies checks, up to 1,000 × 20,000.
 */
export function* compileRoutingSlices<A>(
  routes: readonly GatewayRoute[],
  proxies: readonly Upstream<A>[],
): Sliced<RoutingTable<A>> {
  const exact = new Map<string, number>();
  const suffix = new Map<string, number>();
  let catchAll = -1;
  const compiled: CompiledRoute<A>[] = [];
  let checked = 0;
  for (let i = 0; i < routes.length; i++) {
    const r = routes[i]!;
    if (checked >= SLICE_ITEMS * 4) {
      checked = 0;
      yield;
    }
    checked += proxies.length;
    for (const h of r.match.hosts) {
      const host = normalizeHost(h);
      if (host === '*') catchAll = catchAll < 0 ? i : catchAll;
      else if (host.startsWith('*.')) {
        if (!suffix.has(host.slice(1))) suffix.set(host.slice(1), i);
      } else if (!exact.has(host)) exact.set(host, i);
    }
    // A proxy excluded from this route is simply not one of its candidates: picking stays a walk over an
    // array (no per-request look-up), and a sticky key pinned to it moves, as for any proxy gone from
    // the route. It stays a candidate of every other route that selects it.
    // A route whose target check fails through every pool proxy is never excluded from (the control
    // plane fails it open over the whole pool, domain/snapshots/route-fail-open.ts); a worker that owns
    // only excluded proxies of a route has none for it: other workers carry it.
    const candidates = proxies.filter(
      (p) => selects(r.selector ?? {}, p.attributes) && !p.excludedRoutes?.includes(r.name),
    );
    // SUSPECT proxies (docs/health.md) are split off here, once per snapshot, so that preferring the sound
    // ones costs the hot path a second array walked only when the first yields nothing usable.
    const suspect = candidates.filter((p) => p.suspect === true);
    compiled.push({
      name: r.name,
      policy: r.policy,
      stickyKey: r.stickyKey,
      candidates,
      sound: suspect.length === 0 ? candidates : candidates.filter((p) => p.suspect !== true),
      suspect,
      byName: new Map(candidates.map((c) => [c.name, c])),
      cursor: 0,
      suspectCursor: 0,
    });
  }
  return { routes: compiled, exact, suffix, catchAll };
}

/**
 * Each route of `next` goes on rotating where the route of the same name in `previous` stood. The
 * controller sends a snapshot at least once a minute (the grant's renewal); positions back at 0 after
 * each swap sent every request of a route picked fewer times between two swaps than it has proxies to
 * its first few candidates (in name order), and its other proxies none. Off the hot path: once a swap.
 */
export function carryCursors<A>(previous: RoutingTable<A>, next: RoutingTable<A>): void {
  const before = new Map(previous.routes.map((r) => [r.name, r]));
  for (const r of next.routes) {
    const b = before.get(r.name);
    if (b) {
      r.cursor = b.cursor;
      r.suspectCursor = b.suspectCursor;
    }
  }
}

/**
 * Lower-case, no trailing dot, no IPv6 brackets, an IPv6 literal in its RFC 5952 text: the form hosts are
 * indexed (route hosts, when a snapshot is compiled) and looked up in (a request's host).
 */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return canonicalIpv6(h);
}

const NAME_LABEL = /^[-a-z0-9_]+$/;

/**
 * Whether a route host (as HostPattern gives it: lower case, IPv6 brackets dropped) is one the gateway
 * reads one way on both listeners: `*`; a name (no empty label, one trailing dot allowed), bare or after
 * `*.`, that is a DNS name (isNoDnsName: its last label is no number); an IPv4 address parseIpv4 takes; or
 * an IPv6 address parseIpv6 takes (no zone). HostPattern alone also takes `10.0.0.1:8080` (a port: request
 * hosts carry none), `.`, `:::` — indexed as written, they match nothing — and names ending in a number
 * (the WHATWG URL "ends in a number" rule): `010.0.0.1`, `1.2.3`, `0x7f.1` are addresses /v1/fetch
 * rewrites (8.0.0.1, 1.2.0.3, 127.0.0.1), as WHATWG URL does, and the proxy listener refuses as malformed
 * (400), and `*.0.0.1` matched the literal 10.0.0.1 — `*.suffix` is for names.
 */
export function isMatchableHostPattern(host: string): boolean {
  if (host === '*') return true;
  if (host.includes(':')) return /^[0-9a-f:.]+$/.test(host) && parseIpv6(host) !== null;
  if (parseIpv4(host)) return true;
  // One trailing dot is dropped, as normalizeHost drops it (`cafe.be.` matches `cafe.be`).
  const name = (host.startsWith('*.') ? host.slice(2) : host).replace(/\.$/, '');
  // A dotted quad here followed `*.` (`*.1.2.3.4`) or carried a trailing dot (`10.0.0.1.`): refused, as
  // any name whose last label is a number.
  return name.split('.').every((label) => NAME_LABEL.test(label)) && !parseIpv4(name) && !isNoDnsName(name);
}

/** The first route (in snapshot order) whose hosts match; `host` must already be normalised. */
export function matchRoute<A>(table: RoutingTable<A>, host: string): CompiledRoute<A> | undefined {
  let best = table.exact.get(host) ?? Number.POSITIVE_INFINITY;
  // "*.example.com" matches "a.example.com" and "a.b.example.com", never "example.com" itself.
  for (let dot = host.indexOf('.'); dot >= 0; dot = host.indexOf('.', dot + 1)) {
    const i = table.suffix.get(host.slice(dot));
    if (i !== undefined && i < best) best = i;
  }
  if (table.catchAll >= 0 && table.catchAll < best) best = table.catchAll;
  return Number.isFinite(best) ? table.routes[best] : undefined;
}
