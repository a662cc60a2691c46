// What one worker's snapshot holds (contract §3): the ordered routing, and only the proxies it owns and is
// not draining that are healthy, not cordoned (spec.cordoned) and have an endpoint — each with its capacity, the worker's grant as its
// hard expiry, usableUntil = expiresAt − allocationSafetyMargin, its credentials as a Secret Manager
// reference, and (protocol 3) the routes it must be left out of (contract §6 TARGET tier); SOCKS5 proxies
// only from protocol 4 on, and (protocol 5) whether its health verdict is SUSPECT. Built in
// exactly the gateway's wire format (messages/gateway-snapshot.ts), so the worker validates it with the
// same code.
import type { GatewayProxy, GatewayRoute, GatewaySnapshotContent } from '../../messages/gateway-snapshot.js';
import { GATEWAY_SNAPSHOT_SCHEMA_VERSION } from '../../messages/gateway-snapshot.js';
import type { Sha256Hex } from '../gateway/canonical.js';
import { proxyEndpoint } from '../leases/endpoint.js';
import { isHealthy, isSuspect } from '../leases/health.js';
import { isCordoned, type ProxyResource } from '../proxy.js';
import { clientCredentialsRef } from '../served-credentials.js';
import { usableUntil } from '../workers/grants.js';
import {
  readsExcludedRoutes,
  readsFiltersDestinations,
  readsSocks5,
  readsSuspect,
} from '../workers/protocol.js';
import { canonicalText, type Prepared } from './canonical-fast.js';

/** The routing a worker gets when none is configured: every host, least-active over every proxy. */
export const DEFAULT_ROUTING: GatewayRoute[] = [
  { name: 'default', match: { hosts: ['*'] }, selector: {}, policy: 'least-active' },
];

/** What every entry of one worker's snapshot shares. */
interface EntryContext {
  expiresAt: string;
  usable: string;
  /** The session reads `filtersDestinations` (protocol 2 on). */
  markFilters: boolean;
  /** The routes an entry may be excluded from — the snapshot's, less those failing open — when the
   *  session reads `excludedRoutes` (protocol 3 on); null when it does not. */
  routeNames: ReadonlySet<string> | null;
  /** The session reads `protocol: "socks5"` (protocol 4 on). */
  socks5: boolean;
  /** The session reads `suspect` (protocol 5 on). */
  markSuspect: boolean;
}

/**
 * Whether a proxy can carry traffic now: healthy, with an address, and not cordoned. Only such a proxy is
 * in a snapshot: a cordoned one leaves it as one that stopped being healthy does (the worker stops sending
 * it new requests and drains what runs), and the planner counts it as serving nothing.
 */
export const carriesTraffic = (p: ProxyResource): boolean =>
  proxyEndpoint(p) !== null && isHealthy(p) && !isCordoned(p);

/** The snapshot entry of an owned proxy, or null when it cannot carry traffic now (unhealthy, no address, cordoned). */
function entryOf(p: ProxyResource, x: EntryContext): GatewayProxy | null {
  const endpoint = proxyEndpoint(p);
  if (!endpoint || !carriesTraffic(p)) return null;
  // The planner never gives a SOCKS5 proxy to a worker below protocol 4 (plan-pass.ts); this is the
  // guarantee where the bytes are written: such a worker's strict schema would refuse the whole snapshot.
  if (endpoint.protocol === 'socks5' && !x.socks5) return null;
  const credentials = clientCredentialsRef(p);
  return {
    name: p.name,
    host: endpoint.host,
    port: endpoint.port,
    protocol: endpoint.protocol,
    capacity: p.spec.capacity,
    expiresAt: x.expiresAt,
    usableUntil: x.usable,
    attributes: p.spec.attributes,
    // The version the proxy's instance serves (mid-rotation, not yet the newest): served-credentials.ts.
    ...(credentials ? { credentialsRef: { secret: credentials.secret, version: credentials.version } } : {}),
    // Written only when true, and only for workers that read it: any other entry stays byte for byte
    // what it was, so a worker of protocol 1 still accepts it.
    ...(x.markFilters && filtersDestinations(p) ? { filtersDestinations: true } : {}),
    ...excludedRoutesOf(p, x.routeNames),
    // SUSPECT (the Healthy condition's reason, docs/health.md), as filtersDestinations: only when true and
    // only for workers that read it. Its coming and going is a change of the entry: an upsert in a delta.
    ...(x.markSuspect && isSuspect(p) ? { suspect: true } : {}),
  };
}

/**
 * The proxy's unreachable routes (contract §6 TARGET tier, status.unreachableRoutes) that this snapshot's
 * routing has, sorted and de-duplicated: a route no longer in the routing has nothing to exclude from.
 * Nothing when the session does not read the field or no route is left — the entry is then byte for byte
 * what it was before the field. A proxy excluded from every route that selects it stays in the snapshot:
 * the snapshot says what the worker owns; the routes say what it may pick.
 */
function excludedRoutesOf(
  p: ProxyResource,
  routeNames: ReadonlySet<string> | null,
): { excludedRoutes?: string[] } {
  const unreachable = p.status.unreachableRoutes;
  if (!routeNames || !unreachable || unreachable.length === 0) return {};
  const excluded = [...new Set(unreachable.filter((r) => routeNames.has(r)))].sort();
  return excluded.length > 0 ? { excludedRoutes: excluded } : {};
}

/**
 * Whether the proxy refuses private destinations itself, so a gateway may hand it plain HTTP by host
 * name (docs/gateway.md § Plain HTTP). Only a managed proxy on the default cloud-init is known to: its
 * squid denies loopback, link-local, RFC 1918, CGNAT and ULA (docs/cloud-init.md § squid's
 * configuration). A custom cloud-init may run anything, and an external proxy is whatever its operator made it.
 */
export const filtersDestinations = (p: ProxyResource): boolean =>
  p.spec.mode === 'managed' && p.spec.cloudInit === undefined;

export interface ContentInput {
  workerId: string;
  epoch: number;
  grant: Date;
  routing: readonly GatewayRoute[];
  /** The proxies the worker owns and is not draining. */
  owned: readonly ProxyResource[];
  now: Date;
  allocationSafetyMarginMs: number;
  /**
   * The worker's session protocol: below 2 its entries never carry `filtersDestinations`, below 3 never
   * `excludedRoutes`, below 4 no SOCKS5 proxy is in it at all, below 5 never `suspect` (workers/protocol.ts).
   */
  protocolVersion: number;
  /** Routes whose every pool proxy is unreachable (route-fail-open.ts): no entry is excluded from them. */
  failOpenRoutes?: readonly string[];
}

/** The routes an entry may be excluded from: the snapshot's, less those that fail open. */
function excludableRoutes(x: ContentInput): ReadonlySet<string> {
  const open = new Set(x.failOpenRoutes ?? []);
  return new Set(x.routing.map((r) => r.name).filter((n) => !open.has(n)));
}

/** The content of the worker's next snapshot; `version` is 0 until it is known to differ from the last. */
export function workerContent(x: ContentInput): GatewaySnapshotContent {
  const proxies: GatewayProxy[] = [];
  // Every entry expires with the worker's grant: format the two instants once, not 10,000 times.
  const expiresAt = x.grant.toISOString();
  const ctx: EntryContext = {
    expiresAt,
    usable: usableUntil(x.grant, x.allocationSafetyMarginMs).toISOString(),
    markFilters: readsFiltersDestinations(x.protocolVersion),
    routeNames: readsExcludedRoutes(x.protocolVersion) ? excludableRoutes(x) : null,
    socks5: readsSocks5(x.protocolVersion),
    markSuspect: readsSuspect(x.protocolVersion),
  };
  for (const p of x.owned) {
    const entry = entryOf(p, ctx);
    if (entry) proxies.push(entry);
  }
  proxies.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    schemaVersion: GATEWAY_SNAPSHOT_SCHEMA_VERSION,
    version: 0,
    ownershipEpoch: x.epoch,
    workerId: x.workerId,
    generatedAt: x.now.toISOString(),
    validUntil: x.grant.toISOString(),
    routing: x.routing.map((r) => ({ ...r })),
    proxies,
  };
}

const EPOCH_ZERO = new Date(0).toISOString();

/**
 * A digest of what the worker would act on — everything but `version` and `generatedAt` — so that a pass
 * that changes nothing publishes and writes nothing (a steady fleet costs no snapshot writes).
 */
export const contentDigest = (p: Prepared, sha256: Sha256Hex): string =>
  sha256(canonicalText(p, 1, EPOCH_ZERO));
