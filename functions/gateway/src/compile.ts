// Turns a validated snapshot into the immutable form the hot path reads: upstream entries carrying
// their pre-computed Proxy-Authorization line and a reference to their live counters, and the compiled
// routing table. A proxy whose credentials cannot be resolved is left out rather than sent without them.
// The upstream's protocol is decided here, once per snapshot: the hot path branches on `socks5` once,
// when it dials, and an http upstream's requests do exactly what they did before SOCKS5 existed.

import {
  compileRoutingSlices,
  type LiveCounters,
  type RoutingTable,
  type Upstream,
} from '../../../shared/src/domain/gateway/routing.js';
import { drain, SLICE_ITEMS, type Sliced } from '../../../shared/src/domain/gateway/slices.js';
import type { GatewaySnapshot } from '../../../shared/src/messages/gateway-snapshot.js';
import {
  type CredentialError,
  proxyAuthorizationLine,
  proxyAuthorizationValue,
  refKey,
  type UpstreamCredentials,
} from './credentials.js';
import { absoluteUriFor, type PlainHttpSetting } from './plain-http.js';

export interface UpstreamAuth {
  /** "Proxy-Authorization: Basic …\r\n", or "" for an open proxy. */
  readonly line: string;
  /** The same credentials as a header value ("Basic …"), or "": for http.request's header list. */
  readonly authorization: string;
  /**
   * Plain HTTP goes to this upstream in absolute form with the host name (it resolves and filters the
   * destination itself), rather than through a CONNECT pinned to the address the guard checked.
   */
  readonly absoluteUri: boolean;
  /**
   * Set for a SOCKS5 upstream, null for an http one: its RFC 1929 credentials (null for an open proxy,
   * method 0x00). Such an upstream speaks no HTTP, so `line`/`authorization` are "" and `absoluteUri` is
   * false: every request goes through a SOCKS5 CONNECT to the pinned address (socks5-handshake.ts).
   */
  readonly socks5: { readonly credentials: UpstreamCredentials | null } | null;
}

/** Why a snapshot entry was left out of the compiled table (logged, never the secret's value). */
export type SkipReason = 'credentials_unavailable' | 'credentials_too_long';

/** RFC 1929 §2: ULEN and PLEN are one byte each, and a user name is at least one byte. */
const fitsRfc1929 = (c: UpstreamCredentials): boolean => {
  const u = Buffer.byteLength(c.username);
  return u >= 1 && u <= 255 && Buffer.byteLength(c.password) <= 255;
};

export interface CompileOptions {
  /** GATEWAY_PLAIN_HTTP: `auto` follows each proxy's filtersDestinations. */
  plainHttp: PlainHttpSetting;
}

export interface CompiledSnapshot {
  readonly version: number;
  readonly ownershipEpoch: number;
  readonly checksum: string;
  readonly generatedAtMs: number;
  readonly validUntilMs: number;
  /** The wire form, kept as the base for the next delta. */
  readonly source: GatewaySnapshot;
  readonly table: RoutingTable<UpstreamAuth>;
  readonly upstreams: ReadonlyMap<string, Upstream<UpstreamAuth>>;
  /** How many of `upstreams` the snapshot marks SUSPECT (gateway_suspect_upstreams, /healthz). */
  readonly suspectUpstreams: number;
  readonly skipped: readonly { proxy: string; secret: string; reason: SkipReason }[];
}

export function compileSnapshot(
  s: GatewaySnapshot,
  credentials: ReadonlyMap<string, UpstreamCredentials | CredentialError>,
  counters: (name: string) => LiveCounters,
  opts: CompileOptions = { plainHttp: 'auto' },
): CompiledSnapshot {
  return drain(compileSnapshotSlices(s, credentials, counters, opts));
}

/** compileSnapshot(), yielding between slices of proxies and of routes (shared slices.ts). */
export function* compileSnapshotSlices(
  s: GatewaySnapshot,
  credentials: ReadonlyMap<string, UpstreamCredentials | CredentialError>,
  counters: (name: string) => LiveCounters,
  opts: CompileOptions = { plainHttp: 'auto' },
): Sliced<CompiledSnapshot> {
  const upstreams: Upstream<UpstreamAuth>[] = [];
  const skipped: { proxy: string; secret: string; reason: SkipReason }[] = [];
  for (let i = 0; i < s.proxies.length; i++) {
    if (i % SLICE_ITEMS === SLICE_ITEMS - 1) yield;
    const p = s.proxies[i]!;
    let creds: UpstreamCredentials | null = null;
    const socks5 = p.protocol === 'socks5';
    if (p.credentialsRef) {
      const c = credentials.get(refKey(p.credentialsRef));
      if (!c || c instanceof Error) {
        skipped.push({ proxy: p.name, secret: p.credentialsRef.secret, reason: 'credentials_unavailable' });
        continue;
      }
      if (socks5 && !fitsRfc1929(c)) {
        skipped.push({ proxy: p.name, secret: p.credentialsRef.secret, reason: 'credentials_too_long' });
        continue;
      }
      creds = c;
    }
    upstreams.push({
      name: p.name,
      host: p.host,
      port: p.port,
      capacity: p.capacity,
      usableUntilMs: Date.parse(p.usableUntil),
      expiresAtMs: Date.parse(p.expiresAt),
      attributes: p.attributes ?? {},
      excludedRoutes: p.excludedRoutes,
      suspect: p.suspect === true,
      live: counters(p.name),
      auth: socks5
        ? { line: '', authorization: '', absoluteUri: false, socks5: { credentials: creds } }
        : {
            line: proxyAuthorizationLine(creds),
            authorization: proxyAuthorizationValue(creds),
            absoluteUri: absoluteUriFor(opts.plainHttp, p.filtersDestinations),
            socks5: null,
          },
    });
  }
  const table = yield* compileRoutingSlices(s.routing, upstreams);
  return {
    version: s.version,
    ownershipEpoch: s.ownershipEpoch,
    checksum: s.checksum,
    generatedAtMs: Date.parse(s.generatedAt),
    validUntilMs: Date.parse(s.validUntil),
    source: s,
    table,
    upstreams: new Map(upstreams.map((u) => [u.name, u])),
    suspectUpstreams: upstreams.filter((u) => u.suspect).length,
    skipped,
  };
}
