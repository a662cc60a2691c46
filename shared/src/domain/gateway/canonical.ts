// The canonical text a snapshot checksum covers (control-plane seed §3: "a content checksum"), shared by
// the controller that signs a snapshot and the worker that verifies one. Canonical means: object keys
// sorted, absent optionals omitted, defaulted fields written out, timestamps normalised to
// toISOString(), hosts lower-cased, proxies sorted by name; routing keeps its order (first match wins).
import type {
  GatewayProxy,
  GatewayRoute,
  GatewaySnapshot,
  GatewaySnapshotContent,
} from '../../messages/gateway-snapshot.js';

/** Hex sha256 of a UTF-8 string. Injected: the domain core does no crypto I/O of its own. */
export type Sha256Hex = (text: string) => string;

/** JSON with object keys sorted at every depth; undefined members are dropped as JSON.stringify does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

const iso = (t: string): string => new Date(Date.parse(t)).toISOString();
const normHost = (h: string): string => h.toLowerCase().replace(/^\[(.*)\]$/, '$1');
const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

export function canonicalRoute(r: GatewayRoute): Record<string, unknown> {
  return {
    name: r.name,
    match: { hosts: r.match.hosts.map(normHost) },
    selector: r.selector ?? {},
    policy: r.policy,
    stickyKey:
      r.stickyKey && 'header' in r.stickyKey ? { header: r.stickyKey.header.toLowerCase() } : r.stickyKey,
  };
}

/**
 * A proxy's excluded routes as the checksum covers them: a set of names, so sorted and de-duplicated, and
 * absent when empty — absent and empty mean the same (no route excluded), and entries without the field
 * keep their checksums.
 */
export function canonicalExcludedRoutes(routes: readonly string[] | undefined): string[] | undefined {
  if (!routes || routes.length === 0) return undefined;
  return [...new Set(routes)].sort();
}

export function canonicalProxy(p: GatewayProxy): Record<string, unknown> {
  return {
    name: p.name,
    host: p.host,
    port: p.port,
    protocol: p.protocol,
    capacity: p.capacity,
    expiresAt: iso(p.expiresAt),
    usableUntil: iso(p.usableUntil),
    attributes: p.attributes ?? {},
    credentialsRef: p.credentialsRef
      ? { secret: p.credentialsRef.secret, version: p.credentialsRef.version ?? 'latest' }
      : undefined,
    // Only `true` is written: false and absent mean the same, and snapshots from before the field keep
    // their checksums.
    filtersDestinations: p.filtersDestinations === true ? true : undefined,
    excludedRoutes: canonicalExcludedRoutes(p.excludedRoutes),
    // As filtersDestinations: only `true`, so entries without the field keep their checksums.
    suspect: p.suspect === true ? true : undefined,
  };
}

/** The canonical JSON text of a snapshot's content (everything but `kind` and `checksum`). */
export function canonicalize(s: GatewaySnapshotContent | GatewaySnapshot): string {
  return canonicalJson({
    schemaVersion: s.schemaVersion,
    version: s.version,
    ownershipEpoch: s.ownershipEpoch,
    workerId: s.workerId,
    generatedAt: iso(s.generatedAt),
    validUntil: iso(s.validUntil),
    routing: s.routing.map(canonicalRoute),
    proxies: [...s.proxies].sort(byName).map(canonicalProxy),
  });
}

export const snapshotChecksum = (s: GatewaySnapshotContent | GatewaySnapshot, sha256: Sha256Hex): string =>
  sha256(canonicalize(s));

/** A full snapshot message from its content: proxies in canonical order, checksum filled in. */
export function buildSnapshot(content: GatewaySnapshotContent, sha256: Sha256Hex): GatewaySnapshot {
  return {
    kind: 'full',
    ...content,
    proxies: [...content.proxies].sort(byName),
    checksum: snapshotChecksum(content, sha256),
  };
}
