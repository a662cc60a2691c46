// A lease's target names the site a cooldown holds for: cooldowns are stored and matched per (proxy, site),
// the site being this canonical target's host (cooldown.ts cooldownSite), so two spellings of one host
// must become one string or a rate-limited site is leased the same proxy again under its other spelling.
// Host names are lower-cased (as before); an IPv6 literal — bracketed as in a URL's authority
// (`new URL(u).host` gives "[2001:db8::1]:443"), or bare without a port — is checked to be an address and
// written in brackets in RFC 5952 form (lower case, longest zero run as "::"). A host
// name's one trailing dot (`new URL('https://shop.example./').host` keeps it) is dropped, as the gateway
// drops it: "shop.example." is the same site. A port, after a host name or an address, is one number in
// 1-65535 with its leading zeros dropped. A zone ("%eth0") names an interface of the crawler's host, not a
// site. An IPv4-mapped address ("[::ffff:1.2.3.4]:443") is the IPv4 address it maps, as for every rule of
// the gateway (gateway/ip.ts unmapped): written as that address ("1.2.3.4:443"), so that a site reported
// under one spelling is cooled down under the other too. A host whose last label is a number but which is no
// dotted quad ("127.1", "0x7f.0.0.1", "2130706433") is refused, as the gateway and endpoint hosts refuse it
// (gateway/ip.ts isNoDnsName): kept as written it was a site of its own, and a ban reported under it did not
// cool down the address every client reads it as (`new URL` writes "127.0.0.1"). A host name is at most
// DNS's 253 characters, its port not counted.
import { ipv6LiteralText, isNoDnsName, parseIpv6 } from '../gateway/ip.js';
import { GLOBAL_TARGET } from './model.js';

const HOST_NAME = /^[a-z0-9_]([-a-z0-9._]*[a-z0-9_])?$/;
/** DNS's limit on a name, without its trailing dot (RFC 1035 § 2.3.4, as written in text). */
export const MAX_HOST_NAME = 253;
const BRACKETED = /^\[([0-9a-f:.]+)\](?::([0-9]{1,5}))?$/;

/** The port written after the host, as a number (leading zeros dropped); null unless one in 1-65535. */
function port(text: string): number | null {
  const n = /^[0-9]{1,5}$/.test(text) ? Number(text) : 0;
  return n >= 1 && n <= 65_535 ? n : null;
}

/** The host an IPv6 literal names: in brackets, or the dotted IPv4 address a mapped one maps. */
function ipv6(text: string): string | null {
  const bytes = /^[0-9a-f:.]+$/.test(text) ? parseIpv6(text) : null;
  if (!bytes) return null;
  const host = ipv6LiteralText(bytes);
  return host.includes(':') ? `[${host}]` : host;
}

/** The one spelling of a target, or null when `text` is no host, host:port, [IPv6] or [IPv6]:port. */
export function canonicalTarget(text: string): string | null {
  const t = text.toLowerCase();
  if (t === GLOBAL_TARGET) return null;
  const bracketed = BRACKETED.exec(t);
  if (bracketed) {
    const host = ipv6(bracketed[1]!);
    if (host === null) return null;
    if (bracketed[2] === undefined) return host;
    const p = port(bracketed[2]);
    return p === null ? null : `${host}:${p}`;
  }
  // A bare address ("2001:db8::1", "::1") is the address, without a port: "[…]" is how a port is given.
  // No host name or host:port has "::" in it, so such a string is an address or nothing.
  if (t.includes('::') || t.split(':').length > 2) {
    const host = ipv6(t);
    if (host !== null || t.includes('::')) return host;
  }
  // host or host:port — one colon at most, and a port that is one (cooldowns would otherwise keep
  // "shop.example:0443" and "shop.example:443" apart, and take "shop.example:80:80" for a site).
  const [named = '', p, ...more] = t.split(':');
  const host = named.endsWith('.') ? named.slice(0, -1) : named;
  if (more.length > 0 || host.length > MAX_HOST_NAME || !HOST_NAME.test(host) || isNoDnsName(host))
    return null;
  if (p === undefined) return host;
  const n = port(p);
  return n === null ? null : `${host}:${n}`;
}
