// What a proxy-listener request asks for, decided from its head alone (pure, so it is unit-tested apart
// from sockets): a CONNECT authority, or an absolute http:// URI with its raw path and body length.
import { type Authority, header, parseAbsoluteHttp, parseAuthority, type RequestHead } from './head.js';

export type RequestTarget =
  | { kind: 'connect'; authority: Authority }
  | { kind: 'http'; authority: Authority; path: string; hostHeader: string; bodyLength: number }
  | { kind: 'refuse'; status: 400 | 411; code: string };

const CONNECT_ANY_CASE = /^connect$/i;

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
