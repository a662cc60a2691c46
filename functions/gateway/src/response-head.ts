// The head of an upstream's response as the proxy listener's client gets it, when the gateway spoke to
// the upstream through Node's HTTP client (absolute-form plain HTTP over a kept-alive connection): the
// upstream hop's own fields go (Connection and what it lists but Transfer-Encoding and Content-Length,
// Keep-Alive, Proxy-Connection, Upgrade, Proxy-Authenticate), and the client's connection always ends
// with this response (`Connection: close`, one request per client connection: docs/gateway.md § Proxy
// listener). Everything else is kept as received, in order, with its case.
import type { IncomingMessage } from 'node:http';
import { trimOws } from './head.js';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'proxy-authenticate']);
/**
 * The fields that frame the body the client gets: kept even when the sender lists them in Connection.
 * The body goes on framed as received (relayed byte for byte on the pinned path, chunked again by
 * `rechunk`), so without them a client would read the chunk-size lines as content, or a body's end as
 * the connection's.
 */
const FRAMING = new Set(['transfer-encoding', 'content-length']);

/**
 * The largest response head Node's HTTP client accepts from an upstream or target (its `maxHeaderSize`)
 * on every path it parses one. Node's default is 16 KiB; squid's `reply_header_max_size` is 64 KB, and the
 * pinned path relays whatever squid relays: below that, a site setting a large cookie would fail on the
 * pooled path and on /v1/fetch (502 target_bad_response) while passing on the pinned one.
 */
export const MAX_RESPONSE_HEAD_BYTES = 65_536;

/**
 * The upstream's own refusal of our credentials: a 407 with Proxy-Authenticate (RFC 9110 §11.7.1 —
 * a proxy's 407 MUST carry it). A target's 407 relayed by the upstream has none: squid removes the
 * origin's, as a hop-by-hop field of the other hop. That one is the target's answer, not a proxy fault.
 */
export function isProxyChallenge(res: IncomingMessage): boolean {
  return res.statusCode === 407 && res.headers['proxy-authenticate'] !== undefined;
}

/**
 * The upstream's own error page rather than the target's answer: squid (what a managed proxy runs) marks
 * every page it makes — the target unreachable (ERR_CONNECT_FAIL), its name unresolved (ERR_DNS_FAIL),
 * a read timeout, a destination refused — with X-Squid-Error. Relayed as it is, but no success: the
 * request never reached the target.
 */
export function isProxyErrorPage(res: IncomingMessage): boolean {
  return res.headers['x-squid-error'] !== undefined;
}

/** A Transfer-Encoding whose last coding is chunked: Node's parser de-chunks such a body. */
export const endsChunked = (te: string | undefined): boolean =>
  te !== undefined && /(?:^|,)[ \t]*chunked[ \t]*$/i.test(te);

/**
 * A Transfer-Encoding with a coding besides chunked (`gzip, chunked`; a compliant server sends none, as
 * every request goes without TE; `identity` alone, an old server's, codes nothing). Node's parser undoes the chunking only: the body stays gzipped, and a
 * relay that drops the field (/v1/fetch; an HTTP/1.0 client's de-chunked body) would hand over coded
 * bytes labelled as the plain body.
 */
export const codedBeyondChunked = (te: string | undefined): boolean =>
  te !== undefined && !/^[ \t]*(?:chunked|identity)[ \t]*$/i.test(te);

/**
 * How the body travels to the client. `rechunk`: the upstream sent it chunked and the client speaks
 * HTTP/1.1, so it goes chunked again (a client can then tell a cut-off body from a complete one);
 * `dechunked`: the same for an HTTP/1.0 client, which gets it close-delimited without the
 * Transfer-Encoding field; `as-is`: Content-Length, close-delimited or no body at all.
 */
export type BodyFraming = 'rechunk' | 'dechunked' | 'as-is';

/** `interim`: a 1xx head, which neither has a body nor ends the client's connection. */
type HeadKind = BodyFraming | 'interim';

export function bodyFraming(te: string | undefined, noBody: boolean, clientHttp11: boolean): BodyFraming {
  if (noBody || !endsChunked(te)) return 'as-is';
  return clientHttp11 ? 'rechunk' : 'dechunked';
}

/**
 * The field names a message's `Connection` headers list (lower case), or null without one: fields the
 * sender declared hop-by-hop, which a proxy removes with the Connection header itself (RFC 9110 §7.6.1).
 * `rawHeaders` is Node's flat [name, value, …] list.
 */
export function connectionListed(rawHeaders: readonly string[]): ReadonlySet<string> | null {
  // A set, and no empty token: every field of the head is looked up in it, and a target's
  // `Connection: ,,,,…` of 30,000 empty tokens made a list of them, scanned once per field (quadratic).
  let listed: Set<string> | null = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() !== 'connection') continue;
    listed = listed ?? new Set();
    for (const t of rawHeaders[i + 1]!.toLowerCase().split(',')) {
      const token = trimOws(t, 0);
      if (token) listed.add(token);
    }
  }
  return listed;
}

/**
 * X-Proxyplane-* (lower-cased `name`): the gateway's own fields (responses.ts), never passed on from a
 * target or an upstream — a site sending X-Proxyplane-Error could pass its answer off as the gateway's
 * refusal to a crawler that tells them apart so. Both listeners, heads and trailers.
 */
export const isGatewayField = (name: string): boolean => name.startsWith('x-proxyplane-');

export function clientResponseHead(
  statusCode: number,
  statusMessage: string,
  rawHeaders: readonly string[],
  framing: HeadKind,
): string {
  const listed = connectionListed(rawHeaders);
  let out = `HTTP/1.1 ${statusCode} ${statusMessage}\r\n`;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const n = rawHeaders[i]!.toLowerCase();
    if (HOP_BY_HOP.has(n) || (listed?.has(n) && !FRAMING.has(n))) continue;
    if (framing === 'dechunked' && n === 'transfer-encoding') continue;
    if (isGatewayField(n)) continue;
    out += `${rawHeaders[i]}: ${rawHeaders[i + 1]}\r\n`;
  }
  return framing === 'interim' ? `${out}\r\n` : `${out}Connection: close\r\n\r\n`;
}
