// What a failed SOCKS5 handshake was, read from the bytes the upstream answered (RFC 1928 §3, §6; RFC
// 1929 §2). The `socks` package reports its failures as message text only, and failures are classified
// by code, never by text (style.md): so the handshake itself is the package's, and this reads back the
// upstream's answers — method choice, sub-negotiation status, CONNECT reply — to name what went wrong.
//
// Mirrors how an http upstream's CONNECT answer is classified (proxy-session.ts onUpData): every refusal
// is `refused`, a 502 to the client (tunnelRefusal, upstream-tunnel.ts) reported to the passive health
// track as RESPONSE_HEADERS, not as the proxy's PROXY_HANDSHAKE fault (evidenceStage), whether the
// upstream could not reach the target (REP 0x03 network / 0x04 host unreachable, 0x05 refused, 0x06 TTL
// expired: squid's 502/503/504 to a CONNECT) or would not (0x02 not allowed by its rules: squid's 403);
// bad credentials are `upstream_auth_failed` as a 407 is. The reply code travels as `socksReply` where
// an http upstream's status travels as `upstreamStatus`.
import { socks5Answer } from '../../../shared/src/domain/socks5-answer.js';

export type Socks5Failure =
  /** No acceptable method (0xFF: it wants credentials we do not have), or a sub-negotiation status ≠ 0. */
  | { kind: 'auth_failed' }
  /** The CONNECT reply's REP ≠ 0x00. */
  | { kind: 'refused'; reply: number }
  /** Not a SOCKS5 answer, or a method we never offer. */
  | { kind: 'handshake_failed' }
  /** The upstream stopped answering before its reply was complete. */
  | { kind: 'closed' };

/** `answer`: every byte the upstream sent since the TCP connection was made, in order. */
export function socks5Failure(answer: Uint8Array): Socks5Failure {
  const a = socks5Answer(answer);
  return a.kind === 'not_socks5' ? { kind: 'handshake_failed' } : a;
}
