// Turns a validated snapshot into the immutable form the hot path reads: upstream entries carrying
// their pre-computed Proxy-Authorization line and a reference to their live counters, and the compiled
// routing table. A proxy whose credentials cannot be resolved is left out rather than sent without them.

import {
  compileRouting,
  type LiveCounters,
  type RoutingTable,
  type Upstream,
} from '../../../shared/src/domain/gateway/routing.js';
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
}

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
  readonly skipped: readonly { proxy: string; secret: string }[];
}

export function compileSnapshot(
  s: GatewaySnapshot,
  credentials: ReadonlyMap<string, UpstreamCredentials | CredentialError>,
  counters: (name: string) => LiveCounters,
  opts: CompileOptions = { plainHttp: 'auto' },
): CompiledSnapshot {
  const upstreams: Upstream<UpstreamAuth>[] = [];
  const skipped: { proxy: string; secret: string }[] = [];
  for (const p of s.proxies) {
    let creds: UpstreamCredentials | null = null;
    if (p.credentialsRef) {
      const c = credentials.get(refKey(p.credentialsRef));
      if (!c || c instanceof Error) {
        skipped.push({ proxy: p.name, secret: p.credentialsRef.secret });
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
      live: counters(p.name),
      auth: {
        line: proxyAuthorizationLine(creds),
        authorization: proxyAuthorizationValue(creds),
        absoluteUri: absoluteUriFor(opts.plainHttp, p.filtersDestinations),
      },
    });
  }
  return {
    version: s.version,
    ownershipEpoch: s.ownershipEpoch,
    checksum: s.checksum,
    generatedAtMs: Date.parse(s.generatedAt),
    validUntilMs: Date.parse(s.validUntil),
    source: s,
    table: compileRouting(s.routing, upstreams),
    upstreams: new Map(upstreams.map((u) => [u.name, u])),
    skipped,
  };
}
