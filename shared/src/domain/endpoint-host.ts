// An external proxy's endpoint host is dialled as it is written (the probe, the lease URL, the gateway),
// so it must be a DNS name or an IP literal and nothing else: "p.example.com:3128", "http://p.example.com"
// or "user:pw@p.example.com" would be stored, copied into status.ip, and leave the proxy Unhealthy forever
// with no hint why. The admin API refuses such a host with a 400 instead. Only a host being set counts:
// a stored one is never a reason to refuse another edit of that proxy (managed-ports.ts does the same).
import { isNoDnsName, parseIp } from './gateway/ip.js';
import type { ProxySpec } from './proxy.js';

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** What an endpoint host must be, as the API's 400 and the CLI's check both say it. */
export const ENDPOINT_HOST_RULE =
  'a DNS name or an IP address (no scheme, port, credentials or zone; IPv4 as four plain decimal numbers)';

/** A DNS name (letters, digits, hyphens; one trailing dot allowed) or an IPv4 / IPv6 literal (no brackets). */
export function isEndpointHost(host: string): boolean {
  // Bare literals only: the places that dial it add the brackets an IPv6 address needs in a URL. No zone
  // (`fe80::1%eth0`): it names an interface of whichever machine dials, and parseIp ignores what follows it.
  if (host.startsWith('[') || host.includes('%')) return false;
  if (parseIp(host)) return true;
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length === 0 || name.length > 253) return false;
  // No spelling the resolver reads as another address (inet_aton): `192.168.001.010` is dialled at
  // 192.168.1.8, `127.1` and `0x7f.1` at 127.0.0.1, `10.0.0.1.` is no dotted quad — each would take the
  // proxy's credentials to an address the admin never wrote, while status and the fleet page show the text.
  if (parseIp(name) || isNoDnsName(name.toLowerCase())) return false;
  return name.split('.').every((label) => LABEL.test(label));
}

/** `host:port` as a URL and every proxy client write it: an IPv6 address in brackets (`[2001:db8::1]:3128`). */
export const hostPort = (host: string, port: number): string =>
  `${host.includes(':') ? `[${host}]` : host}:${port}`;

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
 * literal) and a scheme before it — and the rest is cut to '…', after the one separator (`:` `,` `;` `|`
 * `/` space, tab) that shows where the input went wrong. Never the digits after it: a port reads exactly
 * like a numeric password (`john.doe:12345:gw:3128`, a provider's `user:pass:host:port`, against
 * `p.example.com:3128:alice:s3cret`, its `host:port:user:pass`). So `p.example.com:3128` and
 * `p.example.com:3128:alice:s3cret` quote as `p.example.com:…`, the same with `,` `;` `|` or spaces as
 * `p.example.com,…`, `alice:12345:p.example.com:3128` as `alice:…`, `fe80::1%eth0` as `fe80::1%…`,
 * `alice:s3cret@p.example.com:3128` as `…@p.example.com:…` (only when that is the whole text:
 * `u:p@h.example:1:x` as `u:…`), `p example.com` as `p …`.
 */
export function quotableHost(host: string): string {
  const zone = host.indexOf('%');
  const ip = host.slice(0, zone);
  if (zone > 0 && /^[0-9A-Fa-f:.]+$/.test(ip) && parseIp(ip)) return `${ip}%…`;
  const at = userinfoEnd(host);
  const afterAt = at < 0 ? host : host.slice(at + 1);
  const scheme = SCHEME.exec(afterAt)?.[0] ?? '';
  const rest = afterAt.slice(scheme.length);
  // A bracketed literal is one piece, whatever colons it holds.
  const kept = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*)/.exec(rest)![0];
  return `${at < 0 ? '' : '…@'}${scheme}${cutAfter(rest, kept)}`;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

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
