// A lean HTTP/1.x head parser for the proxy listener: the listener reads raw bytes (no http.Server), finds
// the end of the head, and needs only the request line and a handful of headers. Strict: CRLF line
// ends, no obsolete line folding, token header names, no control characters but HTAB; anything else is
// a 400, never a guess.
import { ipv6LiteralText, isNoDnsName, parseIpv6 } from '../../../shared/src/domain/gateway/ip.js';
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  /** Raw header lines without their CRLF, in order. */
  readonly lines: readonly string[];
  /** Lower-cased names and trimmed values, parallel to `lines`. */
  readonly names: readonly string[];
  readonly values: readonly string[];
}

export const HEAD_END = Buffer.from('\r\n\r\n');

const FRAMING_NAMES = new Set(['content-length', 'transfer-encoding']);
/**
 * A field name that reads as Content-Length or Transfer-Encoding once its '_' are '-' (lower-cased
 * `name`). A valid token, and so forwarded, but a server that maps '_' to '-' (CGI, WSGI) would frame the
 * request by it while the gateway and squid read the real fields: refused on both listeners.
 */
export const looksLikeFraming = (name: string): boolean =>
  name.includes('_') && FRAMING_NAMES.has(name.replaceAll('_', '-'));
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEADERS = 128;
/**
 * A control character other than HTAB; on a line already split on CRLF, that includes any CR or LF left:
 * a bare one. Split on CRLF only, `X-A: x\rTransfer-Encoding: chunked` would otherwise be one field here
 * and two at a target that ends lines on a bare CR: a body framing the 411 check never saw (RFC 9112
 * §2.2; field values exclude CTLs but HTAB, RFC 9110 §5.5).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CTL = /[\x00-\x08\x0a-\x1f\x7f]/;
/**
 * The request line allows no HTAB either: a target is no field value, and a pinned tunnel's target that
 * splits its request line on whitespace (RFC 9112 §3 lets it) would read `GET /a<HTAB>HTTP/1.0 HTTP/1.1`
 * otherwise than the gateway did. Node refuses it on the absolute-form path (ERR_UNESCAPED_CHARACTERS).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const LINE_CTL = /[\x00-\x1f\x7f]/;

export function parseRequestHead(text: string): RequestHead | null {
  const lineEnd = text.indexOf('\r\n');
  const requestLine = lineEnd < 0 ? text : text.slice(0, lineEnd);
  const sp1 = requestLine.indexOf(' ');
  const sp2 = requestLine.indexOf(' ', sp1 + 1);
  if (sp1 <= 0 || sp2 <= sp1 + 1 || requestLine.indexOf(' ', sp2 + 1) >= 0) return null;
  const method = requestLine.slice(0, sp1);
  const version = requestLine.slice(sp2 + 1);
  if (!TOKEN.test(method) || (version !== 'HTTP/1.1' && version !== 'HTTP/1.0') || LINE_CTL.test(requestLine))
    return null;
  const lines: string[] = [];
  const names: string[] = [];
  const values: string[] = [];
  let pos = lineEnd < 0 ? text.length : lineEnd + 2;
  while (pos < text.length) {
    let next = text.indexOf('\r\n', pos);
    if (next < 0) next = text.length;
    const line = text.slice(pos, next);
    const colon = line.indexOf(':');
    if (colon <= 0 || lines.length === MAX_HEADERS || CTL.test(line)) return null;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return null;
    lines.push(line);
    names.push(name.toLowerCase());
    values.push(trimOws(line, colon + 1));
    pos = next + 2;
  }
  return { method, target: requestLine.slice(sp1 + 1, sp2), version, lines, names, values };
}

/**
 * `line` from `start`, without the optional whitespace around a field value: SP and HTAB only (RFC 9110
 * §5.5). String#trim also takes U+00A0 — a latin1 0xA0 byte, obs-text the value keeps — so `Content-Length:
 * 5\xA0` read as 5 here while the raw line, forwarded to a pinned target, said something else.
 */
export function trimOws(line: string, start: number): string {
  let from = start;
  let to = line.length;
  while (from < to && (line.charCodeAt(from) === 0x20 || line.charCodeAt(from) === 0x09)) from++;
  while (to > from && (line.charCodeAt(to - 1) === 0x20 || line.charCodeAt(to - 1) === 0x09)) to--;
  return line.slice(from, to);
}

export function header(head: RequestHead, name: string): string | undefined {
  const i = head.names.indexOf(name);
  return i < 0 ? undefined : head.values[i];
}

export interface Authority {
  /** Normalised: lower case, IPv6 without brackets and in its RFC 5952 text. */
  readonly host: string;
  readonly port: number;
}

const HOST_CHARS = /^[a-z0-9_]([-a-z0-9_.]*[a-z0-9_.])?$/;
const V6_CHARS = /^[0-9a-f:.]+$/;

/** "host:port", "[v6]:port", or without a port when defaultPort is given. No userinfo, no junk. */
export function parseAuthority(text: string, defaultPort?: number): Authority | null {
  let host: string;
  let rest: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return null;
    host = text.slice(1, close).toLowerCase();
    if (!V6_CHARS.test(host)) return null;
    // Bracketed text that is no IPv6 address ("[1::2::3]", "[....]") is a malformed target, a 400: kept,
    // it went on to the resolver and came back a 502. Otherwise one spelling per address (RFC 5952), the
    // one route hosts are compiled in (an IPv4-mapped one the IPv4 address it maps): only literals pay
    // for the parse.
    const bytes = parseIpv6(host);
    if (!bytes) return null;
    host = ipv6LiteralText(bytes);
    rest = text.slice(close + 1);
  } else {
    const colon = text.indexOf(':');
    host = (colon < 0 ? text : text.slice(0, colon)).toLowerCase();
    if (host.endsWith('.')) host = host.slice(0, -1);
    if (!HOST_CHARS.test(host) || isNoDnsName(host)) return null;
    rest = colon < 0 ? '' : text.slice(colon);
  }
  if (rest === '') return defaultPort === undefined ? null : { host, port: defaultPort };
  if (!/^:[0-9]{1,5}$/.test(rest)) return null;
  const port = Number(rest.slice(1));
  return port >= 1 && port <= 65535 ? { host, port } : null;
}

/** An absolute http:// request target split into authority and the raw path (kept byte for byte). */
export function parseAbsoluteHttp(target: string): { authority: Authority; path: string } | null {
  if (target.length < 8 || target.slice(0, 7).toLowerCase() !== 'http://') return null;
  let end = 7;
  while (end < target.length && target[end] !== '/' && target[end] !== '?' && target[end] !== '#') end++;
  const authority = parseAuthority(target.slice(7, end), 80);
  if (!authority) return null;
  let path = target.slice(end);
  const hash = path.indexOf('#');
  if (hash >= 0) path = path.slice(0, hash);
  if (path === '') path = '/';
  else if (path.startsWith('?')) path = `/${path}`;
  return { authority, path };
}

/** "1.2.3.4:80" or "[2001:db8::1]:443": what a CONNECT line names. */
export const formatAuthority = (address: string, port: number): string =>
  address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;

/**
 * The status code of an HTTP/1.x status line at the start of `buf`, or 0 if it is not one (yet). `max`:
 * the highest code taken — a proxy's answer is within HTTP's 100–599; a target's may be any three digits
 * from 100 (LinkedIn's 999), which Node's parser relays on the absolute-form path.
 */
export function statusOf(buf: Buffer, max = 599): number {
  if (buf.length < 12 || buf.toString('latin1', 0, 7) !== 'HTTP/1.' || buf[8] !== 0x20) return 0;
  // Three digits (RFC 9112 §4): Number() also read "2e2" as 200 and "1E2" as 100.
  let code = 0;
  for (let i = 9; i < 12; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) return 0;
    code = code * 10 + d;
  }
  return code >= 100 && code <= max ? code : 0;
}

// Hop-by-hop headers (RFC 9110 §7.6.1) and the client's proxy credentials never reach the target; nor
// does an HTTP/1.0 client's Expect, which a recipient must ignore (RFC 9110 §10.1.1): forwarded, the
// upstream hop (HTTP/1.1) would honour it and answer 100 Continue, which an HTTP/1.0 client cannot take.
const HOP_BY_HOP = new Set([
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
]);

/**
 * The request as the target sees it inside the tunnel: origin-form target, the client's end-to-end
 * headers, and `Connection: close` (one request per client connection, so a pipelined second request can
 * never ride a tunnel that was checked for the first).
 */
export function originFormHead(h: RequestHead, path: string, hostFallback: string): string {
  return forwardedHead(h, `${h.method} ${path} ${h.version}\r\n`, hostFallback, '');
}

/**
 * The absolute-form target an upstream proxy that resolves and filters the destination itself receives:
 * the client's host name, so the upstream can reuse its connections to the target.
 */
export function absoluteUrl(authority: Authority, path: string): string {
  const host = authority.host.includes(':') ? `[${authority.host}]` : authority.host;
  const port = authority.port === 80 ? '' : `:${authority.port}`;
  return `http://${host}${port}${path}`;
}

/**
 * The same end-to-end headers as originFormHead, as the flat [name, value, …] list http.request takes
 * (names keep their case, order is kept), plus our credentials for the upstream. No Connection header:
 * the keep-alive agent sets it for the upstream hop.
 */
export function forwardedHeaders(h: RequestHead, hostFallback: string, proxyAuthorization: string): string[] {
  const forwarded = endToEnd(h);
  const out: string[] = [];
  let hasHost = false;
  for (let i = 0; i < h.names.length; i++) {
    const n = h.names[i]!;
    if (!forwarded(n)) continue;
    if (n === 'host') hasHost = true;
    const line = h.lines[i]!;
    out.push(line.slice(0, line.indexOf(':')), h.values[i]!);
  }
  if (!hasHost) out.push('Host', hostFallback);
  if (proxyAuthorization) out.push('Proxy-Authorization', proxyAuthorization);
  return out;
}

/**
 * Headers a `Connection` list may never remove: the request's framing and its target. The body length was
 * taken from the client's Content-Length (request-target.ts), so dropping that header while forwarding the
 * body would leave its bytes unframed on the upstream connection — to be read as the start of the next
 * request, which on a kept-alive pooled connection is another client's (request smuggling).
 */
const NEVER_LISTED = new Set(['content-length', 'transfer-encoding', 'host']);

/** Whether a header (lower-case name) of this request reaches the target: the filter above, per request. */
function endToEnd(h: RequestHead): (name: string) => boolean {
  const listed = connectionTokens(h);
  const http10 = h.version === 'HTTP/1.0';
  return (n) => !HOP_BY_HOP.has(n) && !listed?.includes(n) && !(http10 && n === 'expect');
}

/** What every Connection header of the request lists (a second one counts as much as the first). */
function connectionTokens(h: RequestHead): string[] | null {
  let listed: string[] | null = null;
  for (let i = 0; i < h.names.length; i++) {
    if (h.names[i] !== 'connection') continue;
    listed = listed ?? [];
    for (const t of h.values[i]!.toLowerCase().split(',')) {
      const name = trimOws(t, 0);
      if (!NEVER_LISTED.has(name)) listed.push(name);
    }
  }
  return listed;
}

function forwardedHead(h: RequestHead, requestLine: string, hostFallback: string, extra: string): string {
  const forwarded = endToEnd(h);
  let out = requestLine;
  let hasHost = false;
  for (let i = 0; i < h.names.length; i++) {
    const n = h.names[i]!;
    if (!forwarded(n)) continue;
    if (n === 'host') hasHost = true;
    out += `${h.lines[i]}\r\n`;
  }
  if (!hasHost) out += `Host: ${hostFallback}\r\n`;
  return `${out}${extra}Connection: close\r\n\r\n`;
}
