// Which targets a gateway refuses to reach (server-side request forgery): anything that is not the
// public internet — loopback, RFC 1918, CGNAT, link-local with the metadata server, unique-local IPv6,
// multicast, reserved ranges, and IPv6 forms that embed one of those IPv4 addresses. Decided on the
// resolved addresses, so a public name that resolves to a private address is refused too; an explicit
// allow-list (CIDRs, host:port) lets chosen private targets through (the local plane's demo pages).
import {
  type Cidr,
  canonicalIpv6,
  cidrContains,
  type IpAddress,
  parseCidr,
  parseIp,
  prefixMatches,
  unmapped,
} from './ip.js';

export type SsrfReason =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link_local'
  | 'metadata'
  | 'unique_local'
  | 'multicast'
  | 'reserved'
  | 'bad_port'
  | 'unresolvable';

export type Range = readonly [cidr: string, reason: SsrfReason];

// Order matters: the first range that contains the address names the reason.
export const V4_RANGES: readonly Range[] = [
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.169.254/32', 'metadata'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
];
export const V6_RANGES: readonly Range[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'private'],
  ['100::/64', 'reserved'],
  ['2001::/32', 'reserved'], // Teredo: the IPv4 inside is obfuscated, so refuse the lot.
  ['2001:2::/48', 'reserved'], // benchmarking (RFC 5180), as 198.18.0.0/15 is for IPv4
  ['2001:db8::/32', 'reserved'],
  ['3fff::/20', 'reserved'], // documentation, the second range (RFC 9637)
  ['5f00::/16', 'reserved'], // SRv6 segment identifiers (RFC 9602): routed only inside an operator's domain
  ['fc00::/7', 'unique_local'],
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'private'],
  ['ff00::/8', 'multicast'],
];
// IPv6 prefixes that carry an IPv4 address, and where: NAT64, IPv4-compatible, IPv4-translated (SIIT,
// RFC 2765: what a stateless translator maps back to the IPv4 address), 6to4. (IPv4-mapped ::ffff:0:0/96
// is the IPv4 address itself: ip.ts unmapped.) The managed proxies' squid refuses the same ranges and the
// same embeddings of the IPv4 ones (domain/cloud-init/blocked-destinations.ts).
export const EMBEDDING: readonly (readonly [cidr: string, offset: number])[] = [
  ['64:ff9b::/96', 12],
  ['::/96', 12],
  ['::ffff:0:0:0/96', 12],
  ['2002::/16', 2],
];

const compile = (ranges: readonly Range[]) =>
  ranges.map(([text, reason]) => ({ cidr: parseCidr(text)!, reason }) as const);
const V4 = compile(V4_RANGES);
const V6 = compile(V6_RANGES);
const EMBEDS = EMBEDDING.map(([text, offset]) => ({ cidr: parseCidr(text)!, offset }));

/** Why an address must not be reached, or null for a public address. */
export function classifyIp(address: IpAddress): SsrfReason | null {
  const ip = unmapped(address);
  if (ip.family === 4) return V4.find((r) => cidrContains(r.cidr, ip))?.reason ?? null;
  const direct = V6.find((r) => cidrContains(r.cidr, ip))?.reason;
  if (direct) return direct;
  for (const e of EMBEDS) {
    if (prefixMatches(ip.bytes, e.cidr.bytes, e.cidr.prefix)) {
      return classifyIp({ family: 4, bytes: ip.bytes.slice(e.offset, e.offset + 4) });
    }
  }
  return null;
}

/** Names refused before any lookup: they mean this machine or the metadata server wherever resolved. */
export function classifyName(host: string): SsrfReason | null {
  if (host === 'localhost' || host.endsWith('.localhost')) return 'loopback';
  if (host === 'metadata' || host === 'metadata.google.internal') return 'metadata';
  return null;
}

/** Whether a URL's hostname (brackets dropped) names this machine: a loopback address, `localhost`. */
export function isLoopbackHost(hostname: string): boolean {
  const ip = parseIp(hostname);
  return (ip ? classifyIp(ip) : classifyName(hostname.toLowerCase())) === 'loopback';
}

export interface AllowList {
  readonly cidrs: readonly Cidr[];
  /** "host:port" with the host normalised (lower case, IPv6 without brackets, in its RFC 5952 text). */
  readonly hostPorts: ReadonlySet<string>;
}

export const emptyAllowList: AllowList = { cidrs: [], hostPorts: new Set() };

/** Parses "10.0.0.0/8", "127.0.0.1", "::1", "localhost:8080", "[::1]:8080" entries; returns the bad ones too. */
export function parseAllowList(entries: readonly string[]): { allow: AllowList; invalid: string[] } {
  const cidrs: Cidr[] = [];
  const hostPorts = new Set<string>();
  const invalid: string[] = [];
  for (const raw of entries.map((e) => e.trim()).filter(Boolean)) {
    const cidr = parseCidr(raw);
    const hp = /^\[?([^\]]+?)\]?:([0-9]{1,5})$/.exec(raw);
    if (cidr) cidrs.push(cidr);
    else if (hp && Number(hp[2]) >= 1 && Number(hp[2]) <= 65535) {
      // Normalised as the listeners normalise a target (lower case, one trailing dot dropped, an IPv6
      // literal in its RFC 5952 text, the port a number): "Demo.Local.:08080" or "[0:0:0:0:0:0:0:1]:80"
      // otherwise matched nothing, silently.
      const host = hp[1]!.toLowerCase();
      hostPorts.add(`${canonicalIpv6(host.endsWith('.') ? host.slice(0, -1) : host)}:${Number(hp[2])}`);
    } else invalid.push(raw);
  }
  return { allow: { cidrs, hostPorts }, invalid };
}

export type TargetDecision = { allow: true; address: string } | { allow: false; reason: SsrfReason };

/**
 * The verdict on a target after resolution. `host` is normalised; `addresses` are what the resolver
 * returned (or the literal itself). Every address must pass: a name with one private answer is refused,
 * since the upstream could be steered to it. The first address is the one to connect to.
 */
export function decideTarget(
  host: string,
  port: number,
  addresses: readonly string[],
  allow: AllowList,
): TargetDecision {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { allow: false, reason: 'bad_port' };
  const first = addresses[0];
  if (first === undefined) return { allow: false, reason: 'unresolvable' };
  if (allow.hostPorts.has(`${host}:${port}`)) return { allow: true, address: first };
  const named = classifyName(host);
  if (named) return { allow: false, reason: named };
  for (const text of addresses) {
    const ip = parseIp(text);
    if (!ip) return { allow: false, reason: 'unresolvable' };
    // The entries hold IPv6 in RFC 5952 text; a resolver writes an IPv4-mapped one as inet_ntop does
    // ("::ffff:10.0.0.1"): compared in the entries' text (an IPv4 address pays one indexOf).
    if (allow.hostPorts.size > 0 && allow.hostPorts.has(`${canonicalIpv6(text.toLowerCase())}:${port}`))
      continue;
    if (allow.cidrs.some((c) => cidrContains(c, ip))) continue;
    const reason = classifyIp(ip);
    if (reason) return { allow: false, reason };
  }
  return { allow: true, address: first };
}
