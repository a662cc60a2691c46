// What a proxy-listener request asks for, decided from its head alone (pure, so it is unit-tested apart
// from sockets): a CONNECT authority, or an absolute http:// URI with its raw path and body length.
import { isIP } from 'node:net';
import {
  type Authority,
  header,
  looksLikeFraming,
  parseAbsoluteHttp,
  parseAuthority,
  type RequestHead,
} from './head.js';

export type RequestTarget =
  | { kind: 'connect'; authority: Authority }
  | { kind: 'http'; authority: Authority; path: string; hostHeader: string; bodyLength: number }
  | { kind: 'refuse'; status: 400 | 411; code: string };

const CONNECT_ANY_CASE = /^connect$/i;
const TRACE_ANY_CASE = /^trac[ek]$/i;

export function requestTarget(h: RequestHead): RequestTarget {
  if (h.method === 'CONNECT') {
    const authority = parseAuthority(h.target);
    return authority
      ? { kind: 'connect', authority }
      : { kind: 'refuse', status: 400, code: 'bad_connect_target' };
  }
  // Any other spelling of CONNECT ("connect", "Connect"): Node's HTTP client upper-cases a method, so in
  // absolute form it would reach the upstream as a CONNECT to whatever its parser makes of
  // "http://host/path" (squid: host "http", port 443) — a tunnel to a target the guard never checked.
  if (h.method.length === 7 && CONNECT_ANY_CASE.test(h.method)) {
    return { kind: 'refuse', status: 400, code: 'bad_request' };
  }
  // TRACE (TRACK, its IIS spelling): an upstream answering it itself (RFC 9110 §7.6.2, Max-Forwards: 0)
  // echoes the request it got — in absolute form, with our Proxy-Authorization for that upstream (squid
  // masks it; an upstream that does not would hand the client our credentials). /v1/fetch refuses it too.
  if (h.method.length === 5 && TRACE_ANY_CASE.test(h.method)) {
    return { kind: 'refuse', status: 400, code: 'bad_request' };
  }
  const abs = parseAbsoluteHttp(h.target);
  if (!abs) {
    return {
      kind: 'refuse',
      status: 400,
      code: h.target.startsWith('/') ? 'not_a_proxy_request' : 'bad_request_target',
    };
  }
  // Chunked request bodies would need a chunk parser to forward exactly one request (see head.ts).
  if (header(h, 'transfer-encoding') !== undefined) {
    return { kind: 'refuse', status: 411, code: 'chunked_request_body_unsupported' };
  }
  // Two Host fields (RFC 9112 §3.2: a 400): the target or an upstream might read either one. A
  // Transfer_Encoding or Content_Length too: some server behind may read it as the real one.
  const host = h.names.indexOf('host');
  if ((host >= 0 && h.names.lastIndexOf('host') !== host) || h.names.some(looksLikeFraming)) {
    return { kind: 'refuse', status: 400, code: 'bad_request' };
  }
  let bodyLength = 0;
  const cl = h.names.indexOf('content-length');
  if (cl >= 0) {
    const v = h.values[cl]!;
    // Two Content-Length headers are a request-smuggling tell: refuse rather than pick one.
    if (h.names.lastIndexOf('content-length') !== cl || !/^[0-9]{1,15}$/.test(v)) {
      return { kind: 'refuse', status: 400, code: 'bad_content_length' };
    }
    bodyLength = Number(v);
  }
  const rest = h.target.slice(7);
  const end = rest.search(/[/?#]/);
  return {
    kind: 'http',
    authority: abs.authority,
    path: abs.path,
    hostHeader: end < 0 ? rest : rest.slice(0, end),
    bodyLength,
  };
}

/**
 * Whether the pinned path may send a plain-HTTP request in the same segment as its upstream CONNECT: only
 * when the target is an IP literal and the request's Host field names it (or is absent: the gateway then
 * writes `hostHeader`, the request-target's own authority). An upstream that refuses the CONNECT but keeps
 * reading may take the next bytes as a request of their own, and one that routes origin-form requests by
 * Host (nginx's `proxy_pass http://$host` recipe) would fetch whatever that Host names — another address,
 * or the checked name resolved again by the upstream to whatever its DNS answers then (rebinding) — in
 * the upstream's own network, an address the guard never saw. Any other request waits for the 200.
 * `value === hostHeader` decides the common case without allocating.
 */
export function mayRideWithConnect(h: RequestHead, hostHeader: string, host: string, port: number): boolean {
  if (isIP(host) === 0) return false;
  const i = h.names.indexOf('host');
  if (i < 0) return true;
  const value = h.values[i]!;
  if (value === hostHeader) return true;
  const a = parseAuthority(value, 80);
  return a !== null && a.host === host && a.port === port;
}
