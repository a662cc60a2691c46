// The destinations a managed proxy's squid refuses by default (`acl proxyplane_blocked dst …`): the ranges
// the gateway's SSRF guard refuses (domain/gateway/ssrf.ts), read from its own tables so that the two
// cannot drift apart. An address-based acl cannot look inside an IPv6 address, so the IPv6 forms that
// carry an IPv4 address (NAT64 64:ff9b::/96, IPv4-compatible ::/96, SIIT ::ffff:0:0:0/96, 6to4 2002::/16)
// are refused for each refused IPv4 range, as the guard refuses them, and reach public IPv4 as before —
// a VPC that uses NAT64 needs it to reach public IPv4 at all. IPv4-mapped addresses (::ffff:a.b.c.d) are
// IPv4 to squid already. Entries inside another entry are left out (squid warns about each).
import { type Cidr, formatIpv6, parseCidr, prefixMatches } from '../gateway/ip.js';
import { EMBEDDING, V4_RANGES, V6_RANGES } from '../gateway/ssrf.js';

const text = (c: Cidr): string => {
  const address = c.family === 4 ? [...c.bytes].join('.') : formatIpv6(c.bytes);
  return c.prefix === (c.family === 4 ? 32 : 128) ? address : `${address}/${c.prefix}`;
};

const inside = (c: Cidr, outer: Cidr): boolean =>
  c.family === outer.family && outer.prefix <= c.prefix && prefixMatches(c.bytes, outer.bytes, outer.prefix);

/** Each refused IPv4 range as carried inside each embedding prefix. */
function embedded(v4: readonly Cidr[]): Cidr[] {
  return EMBEDDING.flatMap(([prefixText, offset]) => {
    const prefix = parseCidr(prefixText)!;
    return v4.map((r) => {
      const bytes = prefix.bytes.slice();
      bytes.set(r.bytes, offset);
      return { family: 6 as const, bytes, prefix: offset * 8 + r.prefix };
    });
  });
}

function derive(): string[] {
  const v4 = V4_RANGES.map(([c]) => parseCidr(c)!);
  const all = [...v4, ...V6_RANGES.map(([c]) => parseCidr(c)!), ...embedded(v4)];
  const kept = all.filter((c, i) => !all.some((o, j) => j !== i && inside(c, o) && (!inside(o, c) || j < i)));
  return kept.map(text);
}

/** What the SSRF guard refuses by range, as squid `dst` entries. */
export const DEFAULT_BLOCKED_DESTINATIONS: readonly string[] = Object.freeze(derive());
