// An external proxy's endpoint host is dialled as it is written (the probe, the lease URL, the gateway),
// so it must be a DNS name or an IP literal and nothing else: "p.example.com:3128", "http://p.example.com"
// or "user:pw@p.example.com" would be stored, copied into status.ip, and leave the proxy Unhealthy forever
// with no hint why. The admin API refuses such a host with a 400 instead. Only a host being set counts:
// a stored one is never a reason to refuse another edit of that proxy (managed-ports.ts does the same).
import { parseIp } from './gateway/ip.js';
import type { ProxySpec } from './proxy.js';

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** A DNS name (letters, digits, hyphens; one trailing dot allowed) or an IPv4 / IPv6 literal (no brackets). */
export function isEndpointHost(host: string): boolean {
  // Bare literals only: the places that dial it add the brackets an IPv6 address needs in a URL. No zone
  // (`fe80::1%eth0`): it names an interface of whichever machine dials, and parseIp ignores what follows it.
  if (host.startsWith('[') || host.includes('%')) return false;
  if (parseIp(host)) return true;
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length === 0 || name.length > 253) return false;
  return name.split('.').every((label) => LABEL.test(label));
}

/** The host `next` would set that is no host, or null when the spec is acceptable. */
export function refusedEndpointHost(next: ProxySpec, current?: ProxySpec): string | null {
  if (next.mode !== 'external') return null;
  const host = next.endpoint.host;
  if (current?.mode === 'external' && current.endpoint.host === host) return null;
  return isEndpointHost(host) ? null : host;
}

/**
 * A refused host as it may be quoted back (a 400's message, the CLI's stderr, a CI log): only what is known
 * to be no password is kept — the leading host (letters, digits, dots, hyphens, or a bracketed IPv6
 * literal), a port after it, a scheme before it — and the rest is cut to '…', after the one separator
 * (`:` `,` `;` `|` `/` space, tab) that shows where the input went wrong. `p.example.com:3128:alice:s3cret`,
 * the export format of many proxy providers, quotes as `p.example.com:3128:…` (whatever the password holds,
 * an '@' included), the same with `,` `;` `|` or spaces as `p.example.com,3128,…` and so on,
 * `p.example.com alice s3cret` as `p.example.com …`, `fe80::1%eth0` as `fe80::1%…`,
 * `alice:s3cret@p.example.com` as `…@p.example.com` (only when that is the whole text: `u:p@h.example:1:x`
 * as `u:…`), `alice:s3cret` as `alice:…`, `p example.com` as
 * `p …`. (`admin:1234` reads as a name and a port, and is quoted; followed by more, the
 * digits are cut — `alice:12345:p.example.com:3128` as `alice:…` — unless the name is a host's, portKept.)
 */
export function quotableHost(host: string): string {
  // host SEP port SEP …: a provider's line, cut before the '@' rule can read one in its password.
  const line = /^([A-Za-z0-9.-]+)([:,;| \t])\d{1,5}(?=\2|$)/.exec(host);
  if (line) return cutAfter(host, portKept(line[1]!, line[0], host.slice(line[0].length + 1)));
  const zone = host.indexOf('%');
  const ip = host.slice(0, zone);
  if (zone > 0 && /^[0-9A-Fa-f:.]+$/.test(ip) && parseIp(ip)) return `${ip}%…`;
  const at = userinfoEnd(host);
  const afterAt = at < 0 ? host : host.slice(at + 1);
  const scheme = SCHEME.exec(afterAt)?.[0] ?? '';
  const rest = afterAt.slice(scheme.length);
  // A bracketed literal is one piece, whatever colons it holds; a port only when all its digits fit.
  const [withPort, name] = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*)(?::\d{1,5}(?!\d))?/.exec(rest)!;
  const kept = portKept(name!, withPort, rest.slice(withPort.length + 1));
  return `${at < 0 ? '' : '…@'}${scheme}${cutAfter(rest, kept)}`;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * `name` and the digits after it (`withPort`) as a host and its port, or `name` alone when they may be a
 * user and a numeric password: `alice:12345:p.example.com:3128` (a provider's user:pass:host:port) must not
 * quote `12345`. Kept only when nothing follows (`admin:1234`), or when `name` reads as a host — dotted, or
 * a bracketed literal — and what follows does not (`p.example.com:3128:alice:12345`): a dotted name on both
 * sides (`user.name:12345:p.example.com`) keeps the name alone.
 */
function portKept(name: string, withPort: string, after: string): string {
  if (withPort === name || after === '') return withPort;
  const hostLike = (text: string) => /^(?:\[|[A-Za-z0-9-]+\.)/.test(text);
  return hostLike(name) && !hostLike(after) ? withPort : name;
}

/**
 * Where `[scheme]user[:password]@host[:port]` ends its user part (the last '@'), or -1 when the text is not
 * that whole: a password holding an '@' in a provider's line (`p.example.com alice s3c@ret`,
 * `alice:s3c@ret:p.example.com:3128`) would otherwise have its tail quoted as the host.
 */
function userinfoEnd(host: string): number {
  const at = host.lastIndexOf('@');
  if (at < 0) return -1;
  const user = host.slice(0, at).replace(SCHEME, '');
  const after = host.slice(at + 1).replace(SCHEME, '');
  const oneUser = !/[,;| \t/]/.test(user) && user.split(':').length <= 2;
  const hostAndPort = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/.test(after);
  return oneUser && hostAndPort ? at : -1;
}

/** `kept` (a prefix of `text`), then — when more follows — the separator it starts with, if one, and '…'. */
function cutAfter(text: string, kept: string): string {
  if (kept.length === text.length) return kept;
  const next = text[kept.length]!;
  return `${kept}${':,;|/ \t'.includes(next) ? next : ''}…`;
}
