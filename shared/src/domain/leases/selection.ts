// Lease selection (seed §7): among the healthy proxies matching the selector, not cooling down for the
// target and with room, prefer the fewest active leases, then the lowest latency, then the name — after
// AVAILABLE over SUSPECT: a proxy that has started failing (Healthy=True, reason ProbeSuspect or
// PassiveSuspect; docs/health.md) is still leasable but only when no AVAILABLE candidate has room.
// A proxy the gateway holds (contract §4 step 4: in the gateway pool and not reclaimed, or still owned by a
// worker) is never a candidate, whatever its health: it is counted apart so a 409 says why.
// A proxy speaking a protocol the request did not ask for (SOCKS5 is opt-in: wire.ts LeaseProtocols) is
// left out like an attribute mismatch — not `considered` — since the crawler could not use it anyway.
// A cordoned proxy (spec.cordoned, docs/leases.md § Cordon) is never a candidate either, whatever its health
// or the gateway's hold: the operator's word comes first, and it is counted apart as `cordoned`.
// The counts of a 409 no_match come from the same pass, so they always add up to `considered`.
import { isCordoned, type ProxyProtocol, type ProxyResource, proxyProtocol } from '../proxy.js';
import { hasRoom, type Usage } from './capacity.js';
import { endpointKey, proxyEndpoint } from './endpoint.js';
import { isHealthy, isSuspect } from './health.js';
import type { ProxyInstance } from './instance.js';

export interface SelectionRequest {
  selector: Readonly<Record<string, string>>;
  target: string | null;
  exclusive: boolean;
  /** Protocols the crawler can speak (non-empty; AcquireRequest defaults it to http only). */
  protocols: readonly ProxyProtocol[];
  /**
   * At most this many candidates, the best (default: all). A grant nearly always takes the first: ranking
   * and building every proxy with room cost an acquire milliseconds at 10,000 proxies (a full sort, an
   * object and an endpoint key each); `more` says how many were left out, for a plan of them all.
   */
  limit?: number;
}

/** What selection needs to know beyond the proxies, already evaluated at one instant. */
export interface SelectionView {
  /** The leases counting against this proxy instance's capacity (not those of a deleted namesake). */
  usage(proxy: ProxyInstance): Usage;
  /** Writes this replica has in flight on the proxy: ranked like leases so concurrent requests spread out. */
  pending(proxy: string): number;
  /**
   * When this proxy instance's cooldowns for the target end (epoch ms), or null when none holds (not one
   * of a deleted namesake: instance.ts).
   */
  cooldownEndMs(proxy: ProxyInstance, target: string | null): number | null;
  /** A proxy that cannot be handed out right now for a reason outside its health (e.g. unreadable credentials). */
  unusable(proxy: string): boolean;
  /** The gateway holds it: `!OwnershipGate.leasable(proxy)` (ports/workers-ownership.ts). */
  heldByGateway(proxy: ProxyResource): boolean;
}

export interface Candidate {
  name: string;
  /** metadata.uid of the proxy selected: the lease is granted on this instance (instance.ts). */
  uid: string;
  capacity: number;
  /** Where it listens in the view selected from (endpointKey): the lease records it. */
  endpoint?: string;
  /**
   * What it was ranked by besides its count, for a store that learns its count anew (ranksBehind): SUSPECT
   * (absent: AVAILABLE), and status.latencyMillis (absent: unknown, ranked last).
   */
  suspect?: true;
  latencyMillis?: number;
}

export interface SelectionPlan {
  /** Best first. */
  candidates: Candidate[];
  /** Proxies with room left out of `candidates` by the request's `limit` (ranked below all of them). */
  more: number;
  /** The proxies counted in atCapacity (healthy, not cooling down, but full as the view says). */
  full: string[];
  /** Proxies matching the selector and speaking a requested protocol. */
  considered: number;
  /** Proxies matching the selector but speaking none of the requested protocols: outside `considered`. */
  otherProtocol: number;
  /** Cordoned by an operator (spec.cordoned): counted before every other reason. */
  cordoned: number;
  /** Held by the gateway (pool proxies not reclaimed, and proxies a worker still owns). */
  inGateway: number;
  unhealthy: number;
  inCooldown: number;
  /** The soonest end of the cooldowns counted in inCooldown (epoch ms); null when none is. */
  cooldownEndsAtMs: number | null;
  atCapacity: number;
}

export function matchesSelector(proxy: ProxyResource, selector: Readonly<Record<string, string>>): boolean {
  return matchesAll(proxy, Object.entries(selector));
}

function matchesAll(proxy: ProxyResource, wanted: ReadonlyArray<[string, string]>): boolean {
  const attrs = proxy.spec.attributes;
  for (const [k, v] of wanted) if (!Object.hasOwn(attrs, k) || attrs[k] !== v) return false;
  return true;
}

/** Healthy and reachable: what `healthy=true` lists and what a lease may be granted on. */
export function isLeasable(proxy: ProxyResource): boolean {
  let known = leasable.get(proxy);
  if (known === undefined) {
    known = isHealthy(proxy) && proxyEndpoint(proxy) !== null;
    leasable.set(proxy, known);
  }
  return known;
}

/**
 * isLeasable per proxy document, computed once: selection asks it of every proxy on every request, and a
 * changed proxy arrives as a new object (documents are never mutated in place), so the answer never goes
 * stale. Weak, so a replaced document takes its entry with it.
 */
const leasable = new WeakMap<ProxyResource, boolean>();

export function planSelection(
  proxies: readonly ProxyResource[],
  request: SelectionRequest,
  view: SelectionView,
): SelectionPlan {
  const plan: SelectionPlan = {
    candidates: [],
    more: 0,
    full: [],
    considered: 0,
    otherProtocol: 0,
    cordoned: 0,
    inGateway: 0,
    unhealthy: 0,
    inCooldown: 0,
    cooldownEndsAtMs: null,
    atCapacity: 0,
  };
  const best = new BestRanked(request.limit ?? Number.POSITIVE_INFINITY);
  const wanted = Object.entries(request.selector);
  for (const proxy of proxies) {
    if (!matchesAll(proxy, wanted)) continue;
    if (!request.protocols.includes(proxyProtocol(proxy))) {
      plan.otherProtocol++;
      continue;
    }
    plan.considered++;
    if (isCordoned(proxy)) {
      plan.cordoned++;
      continue;
    }
    if (view.heldByGateway(proxy)) {
      plan.inGateway++;
      continue;
    }
    if (!isLeasable(proxy) || view.unusable(proxy.name)) {
      plan.unhealthy++;
      continue;
    }
    const coolingUntil = view.cooldownEndMs(proxy, request.target);
    if (coolingUntil !== null) {
      plan.inCooldown++;
      if (plan.cooldownEndsAtMs === null || coolingUntil < plan.cooldownEndsAtMs) {
        plan.cooldownEndsAtMs = coolingUntil;
      }
      continue;
    }
    const usage = view.usage(proxy);
    if (hasRoom(usage, proxy.spec.capacity, request.exclusive)) {
      best.offer({
        proxy,
        suspect: isSuspect(proxy),
        active: usage.active + view.pending(proxy.name),
        latency: proxy.status.latencyMillis ?? Number.POSITIVE_INFINITY,
        name: proxy.name,
      });
    } else {
      plan.atCapacity++;
      plan.full.push(proxy.name);
    }
  }
  plan.more = best.leftOut;
  plan.candidates = best.ranked().map(({ proxy, suspect, latency }) => {
    const endpoint = proxyEndpoint(proxy);
    return {
      name: proxy.name,
      uid: proxy.uid,
      capacity: proxy.spec.capacity,
      ...(endpoint && { endpoint: endpointKey(endpoint) }),
      ...(suspect && { suspect }),
      ...(Number.isFinite(latency) && { latencyMillis: latency }),
    };
  });
  return plan;
}

/** What selection ranks by, best first: AVAILABLE, fewest active (+ pending), lowest latency, name. */
interface RankKey {
  suspect: boolean;
  /** Active leases plus this replica's writes in flight. */
  active: number;
  /** Unknown: +Infinity (last). */
  latency: number;
  name: string;
}

interface Ranked extends RankKey {
  proxy: ProxyResource;
}

function rankOf(c: Candidate, active: number): RankKey {
  return {
    suspect: c.suspect === true,
    active,
    latency: c.latencyMillis ?? Number.POSITIVE_INFINITY,
    name: c.name,
  };
}

/**
 * Whether candidate `a`, at `aActive` leases (active + this replica's pending), ranks behind `b` at
 * `bActive`, in selection's order. Candidates are ranked on this replica's view, which other replicas'
 * grants do not update: a store that learns a candidate's count anew (a commit lost to another replica)
 * asks whether the next one should now come first.
 */
export function ranksBehind(a: Candidate, aActive: number, b: Candidate, bActive: number): boolean {
  return compareCandidates(rankOf(a, aActive), rankOf(b, bActive)) > 0;
}

/**
 * The best `limit` of what it is offered, in order: kept sorted as they come (a binary search and an
 * insert into at most `limit`), so a fleet of N costs N·log(limit) comparisons, not a sort of N. Unbounded,
 * it sorts everything once at the end.
 */
class BestRanked {
  private readonly kept: Ranked[] = [];
  leftOut = 0;
  constructor(private readonly limit: number) {}

  offer(r: Ranked): void {
    if (!Number.isFinite(this.limit)) {
      this.kept.push(r);
      return;
    }
    if (this.kept.length === this.limit) {
      this.leftOut++;
      if (this.limit === 0 || compareCandidates(r, this.kept[this.limit - 1]!) >= 0) return;
      this.kept.pop();
    }
    let lo = 0;
    let hi = this.kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareCandidates(this.kept[mid]!, r) <= 0) lo = mid + 1;
      else hi = mid;
    }
    this.kept.splice(lo, 0, r);
  }

  ranked(): Ranked[] {
    if (!Number.isFinite(this.limit)) this.kept.sort(compareCandidates);
    return this.kept;
  }
}

function compareCandidates(a: RankKey, b: RankKey): number {
  if (a.suspect !== b.suspect) return a.suspect ? 1 : -1;
  if (a.active !== b.active) return a.active - b.active;
  if (a.latency !== b.latency) return a.latency < b.latency ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
