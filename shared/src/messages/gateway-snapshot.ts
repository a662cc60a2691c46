// Wire format of what the controller sends a gateway worker (control-plane seed §3 "Snapshot and Delta"):
// a full snapshot or a delta against a base version, each carrying the checksum of the RESULTING full
// snapshot (shared/src/domain/gateway/canonical.ts). Strict everywhere: an unknown field or enum value is
// a rejection, never a guess (seed §7), and a new field means a new schemaVersion.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isMatchableHostPattern } from '../domain/gateway/routing.js';
import { Attributes, ProxyName, SecretRef } from '../domain/proxy.js';

export const GATEWAY_SNAPSHOT_SCHEMA_VERSION = 1;

const Timestamp = z.iso.datetime();
const Checksum = z.string().regex(/^[0-9a-f]{64}$/, 'sha256 hex');
const Version = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const Epoch = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export const WorkerId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?$/);

/** An exact host name or IP, "*.suffix" (strict subdomains of suffix), or "*" (every host). */
export const HostPattern = z
  .string()
  .min(1)
  .max(253)
  .transform((h) => h.toLowerCase().replace(/^\[(.*)\]$/, '$1'))
  .pipe(z.string().regex(/^(\*|(\*\.)?[a-z0-9_]([-a-z0-9_.]*[a-z0-9_])?\.?|[0-9a-f:.]+)$/, 'host pattern'));

const HeaderName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name')
  .transform((h) => h.toLowerCase());

export const RoutingPolicy = z.enum(['least-active', 'round-robin', 'sticky']);
export type RoutingPolicy = z.infer<typeof RoutingPolicy>;

export const StickyKey = z.union([
  z.object({ header: HeaderName }).strict(),
  z.object({ clientCredentials: z.literal(true) }).strict(),
]);
export type StickyKey = z.infer<typeof StickyKey>;

const routeFields = {
  name: ProxyName,
  match: z.object({ hosts: z.array(HostPattern).min(1).max(1000) }).strict(),
  /** Every attribute listed must equal the proxy's attribute; {} selects every proxy. */
  selector: z.record(z.string().min(1).max(63), z.string().max(256)).default({}),
  policy: RoutingPolicy,
  stickyKey: StickyKey.optional(),
};
const stickyRule = {
  check: (r: { policy: RoutingPolicy; stickyKey?: StickyKey | undefined }) =>
    (r.policy === 'sticky') === (r.stickyKey !== undefined),
  message: 'stickyKey is required by, and only allowed with, policy "sticky"',
};

/** A route as a worker receives it in its snapshots. */
export const GatewayRoute = z
  .object(routeFields)
  .strict()
  .refine(stickyRule.check, { message: stickyRule.message });
export type GatewayRoute = z.infer<typeof GatewayRoute>;

export const GatewayProxyProtocol = z.enum(['http', 'socks5']);
export type GatewayProxyProtocol = z.infer<typeof GatewayProxyProtocol>;

export const GatewayProxy = z
  .object({
    name: ProxyName,
    host: z.string().min(1).max(253),
    port: z.number().int().min(1).max(65535),
    /**
     * How the worker talks to the upstream: `http` (CONNECT, or absolute form when it filters
     * destinations) or `socks5` (RFC 1928 CONNECT to the pinned target address). `socks5` is written only
     * for sessions of protocol 4 on (domain/workers/protocol.ts): an older worker's enum refuses it.
     */
    protocol: GatewayProxyProtocol,
    /** Concurrent requests this worker may run through the proxy. */
    capacity: z.number().int().min(1).max(100_000),
    /** Hard expiry of the worker's ownership of the proxy. */
    expiresAt: Timestamp,
    /** expiresAt - allocationSafetyMargin: no new request may pick the proxy from then on (seed §3). */
    usableUntil: Timestamp,
    attributes: Attributes,
    credentialsRef: SecretRef.optional(),
    /**
     * The upstream itself refuses destinations in private networks (loopback, link-local, RFC 1918,
     * CGNAT, ULA), as a managed proxy's squid does (docs/cloud-init.md), so plain HTTP may be handed to it
     * in absolute form with the host name rather than pinned to the address the gateway checked
     * (docs/gateway.md § Plain HTTP). Absent means false: snapshots from before the field keep their
     * meaning and their checksums. Controllers write it only when true, so a snapshot of external
     * proxies is byte for byte what it was.
     */
    filtersDestinations: z.boolean().optional(),
    /**
     * The routes (by name) this worker must not pick the proxy for: their target check fails through it
     * (contract §6 TARGET tier, docs/health.md § TARGET). Absent means none. Written only for sessions of
     * protocol 3 on (domain/workers/protocol.ts), and only when not empty.
     */
    excludedRoutes: z.array(ProxyName).min(1).max(1000).optional(),
    /**
     * The proxy's health verdict is SUSPECT (its Healthy condition is True with reason ProbeSuspect or
     * PassiveSuspect, docs/health.md): still usable, but the worker picks it for a route only when no
     * other candidate of that route is usable. Absent means false. Written only when true, and only for
     * sessions of protocol 5 on (domain/workers/protocol.ts).
     */
    suspect: z.boolean().optional(),
  })
  .strict()
  .refine((p) => Date.parse(p.usableUntil) <= Date.parse(p.expiresAt), {
    message: 'usableUntil must not be after expiresAt',
  });
export type GatewayProxy = z.infer<typeof GatewayProxy>;

export const uniqueNames = (items: readonly { name: string }[]) =>
  new Set(items.map((i) => i.name)).size === items.length;

/**
 * The ordered routes a snapshot carries. The wire half of ONE routing schema: what the admin API accepts
 * and stores (RoutingRules below) is exactly this plus each route's `targetCheck`, which only the control
 * plane reads and `wireRoute` strips — so a routing the API accepts is one every worker accepts, or each
 * snapshot built from it would be refused after its header was saved and every worker would go stale (the
 * gap duplicate names once fell into).
 */
export const GatewayRouting = z
  .array(GatewayRoute)
  .max(1000)
  .refine(uniqueNames, 'route names must be unique');

/**
 * A route's target-group reachability check (contract §6 TARGET tier): the probe fetches `url` through
 * every proxy the route selects; a proxy it keeps failing through is left out of that route only
 * (`excludedRoutes` in its snapshot entries), and stays in the others. Control-plane only: never on the wire.
 */
export const TargetCheck = z
  .object({
    url: z
      .string()
      .max(2048)
      .pipe(z.url({ protocol: /^https?$/ }))
      // Stored in Firestore, shown by GET, sent to proxies: never a place for credentials. The admin PUT
      // also refuses what the URL parser finds as such (RoutingBody: `http:///user:pw@host/`, the slashes
      // after the scheme skipped); only there, so that a routing document already stored still parses.
      .refine((u) => !/^[a-z]+:\/\/[^/?#]*@/i.test(u), 'a target check URL must not carry credentials'),
    /** The status the target answers a proxy it serves with: a final one (1xx never ends a response). */
    expectedStatus: z.number().int().min(200).max(599).default(200),
  })
  .strict();

/**
 * At most this many routes carry a target check: each is one more request per proxy per probe, and the
 * probe runs a proxy's checks side by side (functions/probe/src/tiers.ts), so this also bounds what one
 * slow target site adds to a probe pass (one timeout) and how many requests the probe has in flight.
 */
export const MAX_TARGET_CHECKS = 10;
export type TargetCheck = z.infer<typeof TargetCheck>;

/** A route as the admin API accepts and the routing document stores it: the wire route and its check. */
export const RoutingRule = z
  .object({ ...routeFields, targetCheck: TargetCheck.optional() })
  .strict()
  .refine(stickyRule.check, { message: stickyRule.message });
export type RoutingRule = z.infer<typeof RoutingRule>;

export const RoutingRules = z.array(RoutingRule).max(1000).refine(uniqueNames, 'route names must be unique');

/**
 * Where a routing is written (the admin PUT's RoutingBody, `proxyplane routing apply`'s file), each host
 * must be one a request can have, read one way by both listeners (isMatchableHostPattern): HostPattern took
 * `10.0.0.1:8080`, `.`, `:::`, `*.0.0.1` and `010.0.0.1`, stored them with a 200, and the route silently
 * matched nothing (or IP literals, or only on one listener). Only there,
 * never in HostPattern: routing documents and snapshots already stored with such a host must still parse.
 */
export function refuseUnmatchableHosts(
  routes: readonly { match: { hosts: readonly string[] } }[],
  ctx: z.RefinementCtx,
  at: readonly PropertyKey[],
): void {
  routes.forEach((route, i) => {
    route.match.hosts.forEach((host, j) => {
      if (isMatchableHostPattern(host)) return;
      ctx.addIssue({
        code: 'custom',
        path: [...at, i, 'match', 'hosts', j],
        message:
          'matches no request host: a host pattern is "*", a name not ending in a number, "*." and such a name, or an IP address (IPv4 dotted decimal; IPv6 bare or in brackets), with no port',
        params: { issue: 'invalid_host' },
      });
    });
  });
}

/**
 * The routes as they are stored: a name host's one trailing dot dropped (`shop.example.` → `shop.example`,
 * the host it matches: normalizeHost drops it too). HostPattern reads the dot on any name since 2026-12-07,
 * where before it read it only on names written in hex digits (`cafe.be.`): stored, `shop.example.` would
 * make a routing document and snapshots that earlier builds — gateways mid-rollout, a rollback — cannot
 * parse. So it is taken, and never written.
 */
export function withoutTrailingDots<R extends { match: { hosts: string[] } }>(routes: readonly R[]): R[] {
  return routes.map((r) =>
    r.match.hosts.some(isDottedName)
      ? {
          ...r,
          match: { ...r.match, hosts: r.match.hosts.map((h) => (isDottedName(h) ? h.slice(0, -1) : h)) },
        }
      : r,
  );
}
const isDottedName = (host: string) => host.endsWith('.') && !host.includes(':') && host.length > 1;

/** The route a worker gets: the stored rule without what only the control plane reads. */
export function wireRoute(rule: RoutingRule): GatewayRoute {
  const { targetCheck: _check, ...route } = rule;
  return route;
}

/** Proxies one snapshot carries, or one delta upserts, at most. */
export const MAX_SNAPSHOT_PROXIES = 20_000;
export const PROXY_NAMES_UNIQUE = 'proxy names must be unique';
export const UPSERTED_NAMES_UNIQUE = 'upserted names must be unique';
export const UPSERTED_AND_REMOVED = 'a proxy cannot be both upserted and removed';

/** A delta both upserting and removing one proxy (a set: up to 20,000 of each). */
export function upsertedAndRemoved(d: {
  upserts: readonly { name: string }[];
  removals: readonly string[];
}): boolean {
  if (d.upserts.length === 0 || d.removals.length === 0) return false;
  const removed = new Set(d.removals);
  return d.upserts.some((p) => removed.has(p.name));
}

const snapshotFields = {
  schemaVersion: z.literal(GATEWAY_SNAPSHOT_SCHEMA_VERSION),
  version: Version,
  ownershipEpoch: Epoch,
  workerId: WorkerId,
  generatedAt: Timestamp,
  validUntil: Timestamp,
  routing: GatewayRouting,
  proxies: z.array(GatewayProxy).max(MAX_SNAPSHOT_PROXIES).refine(uniqueNames, PROXY_NAMES_UNIQUE),
};

/** The content a checksum covers: a full snapshot without its checksum. */
export const GatewaySnapshotContent = z.object(snapshotFields).strict();
export type GatewaySnapshotContent = z.infer<typeof GatewaySnapshotContent>;

export const GatewaySnapshot = z
  .object({ kind: z.literal('full'), ...snapshotFields, checksum: Checksum })
  .strict();
export type GatewaySnapshot = z.infer<typeof GatewaySnapshot>;

export const GatewayDelta = z
  .object({
    kind: z.literal('delta'),
    schemaVersion: z.literal(GATEWAY_SNAPSHOT_SCHEMA_VERSION),
    version: Version,
    baseVersion: Version,
    ownershipEpoch: Epoch,
    workerId: WorkerId,
    generatedAt: Timestamp,
    validUntil: Timestamp,
    upserts: z.array(GatewayProxy).max(MAX_SNAPSHOT_PROXIES).refine(uniqueNames, UPSERTED_NAMES_UNIQUE),
    removals: z.array(ProxyName).max(MAX_SNAPSHOT_PROXIES),
    /** Present only when the routing changed; replaces it whole. */
    routing: GatewayRouting.optional(),
    checksum: Checksum,
  })
  .strict()
  .refine((d) => d.version > d.baseVersion, { message: 'version must be greater than baseVersion' })
  .refine((d) => !upsertedAndRemoved(d), { message: UPSERTED_AND_REMOVED });
export type GatewayDelta = z.infer<typeof GatewayDelta>;

/** One Pub/Sub payload on a worker's snapshot subscription. */
export const GatewaySnapshotMessage = z.union([GatewaySnapshot, GatewayDelta]);
export type GatewaySnapshotMessage = z.infer<typeof GatewaySnapshotMessage>;

/** The checksum algorithm of this wire format: hex sha256 of the canonical JSON text. */
export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
