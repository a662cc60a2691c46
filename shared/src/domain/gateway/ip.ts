// IP literals and CIDRs parsed into bytes, with no I/O (the domain core cannot use node:net). Parsing is
// strict on purpose: odd IPv4 spellings ("0x7f.1", "2130706433") are not literals here; nor are they
// names (isNoDnsName), so the gateway refuses them rather than resolve them.
export interface IpAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

export interface Cidr {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

const DECIMAL_OCTET = /^(0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

export function parseIpv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!DECIMAL_OCTET.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

/** A label the URL standard (its "ends in a number" rule) and inet_aton read as a number: decimal or `0x` hex. */
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;

/**
 * Whether a host (lower case, one trailing dot already dropped) is neither an IPv6 literal nor a strict dotted
 * quad (parseIpv4) nor a DNS name the gateway may judge by its look-up: it has an empty label (`a..b`, a
 * second trailing dot: `127.0.0.1..`), or its last label is a number (no TLD is: `0x7f.1`, `127.1`,
 * `2130706433`, `0177.0.0.1`, `1.2.3.4.5`). Upstreams and clients read these as addresses of their own —
 * squid drops every trailing dot and reads the numeric forms as inet_aton does (127.0.0.1), WHATWG URL
 * rewrites them into dotted decimal — while a resolver that answers made-up names (NXDOMAIN redirection,
 * a wildcard) gave the guard a public address to judge. The one rule for the proxy listener's targets
 * (head.ts), the SSRF guard (target-guard.ts), /v1/fetch (fetch-through.ts) and route hosts (routing.ts).
 */
export function isNoDnsName(host: string): boolean {
  if (host.includes(':') || parseIpv4(host)) return false;
  if (host === '' || host.startsWith('.') || host.endsWith('.') || host.includes('..')) return true;
  return NUMERIC_LABEL.test(host.slice(host.lastIndexOf('.') + 1));
}

/**
 * Hex groups, and a dotted quad as the last one only when `endsAddress`: RFC 4291 puts it at the end of the
 * whole address, never before a "::" ("1.2.3.4::"). Accepting more than inet_pton does would let the
 * guard judge an address the upstream never sees: the SOCKS5 client sends a string net.isIP refuses as a
 * host name (ATYP 0x03) for the upstream to resolve, and an http upstream parses the CONNECT its own way.
 */
function parseGroups(text: string, endsAddress: boolean): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (endsAddress && i === parts.length - 1 && p.includes('.')) {
      const v4 = parseIpv4(p);
      if (!v4) return null;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else if (HEX_GROUP.test(p)) groups.push(Number.parseInt(p, 16));
    else return null;
  }
  return groups;
}

/** RFC 4291 text forms, "::" compression, a trailing dotted quad, optional [brackets] and %zone. */
export function parseIpv6(input: string): Uint8Array | null {
  let text = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  if (!text.includes(':')) return null;
  const gap = text.indexOf('::');
  let groups: number[] | null;
  if (gap < 0) {
    groups = parseGroups(text, true);
    if (groups?.length !== 8) return null;
  } else {
    if (text.indexOf('::', gap + 1) >= 0) return null;
    const head = parseGroups(text.slice(0, gap), false);
    const tail = parseGroups(text.slice(gap + 2), true);
    if (!head || !tail || head.length + tail.length > 7) return null;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

/** RFC 5952 text of an IPv6 address: lower case, the longest run of two or more zero groups as `::`. */
export function formatIpv6(bytes: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = (g: number[]) => g.map((n) => n.toString(16)).join(':');
  if (best.at < 0) return hex(groups);
  return `${hex(groups.slice(0, best.at))}::${hex(groups.slice(best.at + best.len))}`;
}

const V6_TEXT = /^[0-9a-fA-F:.]+$/;

/**
 * An IPv6 literal (no brackets) in its RFC 5952 text, the one spelling routes are matched in: a route
 * for `2001:db8::1` and a request for `[2001:0DB8:0:0::1]` name one address — and an IPv4-mapped one
 * (`::ffff:1.2.3.4`) as the IPv4 address it maps (`1.2.3.4`), as the SSRF guard and the lease API's
 * targets take it: one site however a crawler spells it. Any other text is returned as it is — a host
 * name at the cost of one indexOf (it has no ':'), and text that is no address (it then matches no
 * request, whose literals are always canonical).
 */
export function canonicalIpv6(text: string): string {
  if (text.indexOf(':') < 0 || !V6_TEXT.test(text)) return text;
  const bytes = parseIpv6(text);
  return bytes ? ipv6LiteralText(bytes) : text;
}

/** An IPv6 address's one spelling: RFC 5952 text, or dotted IPv4 for an IPv4-mapped one. */
export function ipv6LiteralText(bytes: Uint8Array): string {
  const ip = unmapped({ family: 6, bytes });
  return ip.family === 4 ? ip.bytes.join('.') : formatIpv6(bytes);
}

export function parseIp(text: string): IpAddress | null {
  const v4 = parseIpv4(text);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = parseIpv6(text);
  return v6 ? { family: 6, bytes: v6 } : null;
}

export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf('/');
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return null;
  const max = ip.family === 4 ? 32 : 128;
  if (slash < 0) return { ...ip, prefix: max };
  const p = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(p) || Number(p) > max) return null;
  return { ...ip, prefix: Number(p) };
}

export function prefixMatches(bytes: Uint8Array, net: Uint8Array, prefix: number): boolean {
  const whole = prefix >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== net[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (bytes[whole]! & mask) === (net[whole]! & mask);
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it maps, for every rule. */
export function unmapped(ip: IpAddress): IpAddress {
  if (ip.family === 6 && prefixMatches(ip.bytes, MAPPED_PREFIX, 96)) {
    return { family: 4, bytes: ip.bytes.slice(12) };
  }
  return ip;
}
const MAPPED_PREFIX = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0]);

export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  const ip = unmapped(address);
  const net = cidr.family === 6 ? unmapped(cidr) : cidr;
  if (net.family !== ip.family) return false;
  const prefix = cidr.family === 6 && net.family === 4 ? Math.max(0, cidr.prefix - 96) : cidr.prefix;
  return prefixMatches(ip.bytes, net.bytes, prefix);
}
