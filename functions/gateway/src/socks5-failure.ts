// What a failed SOCKS5 handshake was, read from the bytes the upstream answered (RFC 1928 §3, §6; RFC
// 1929 §2). The `socks` package reports its failures as message text only, and failures are classified
// by code, never by text (style.md): so the handshake itself is the package's, and this reads back the
// upstream's answers — method choice, sub-negotiation status, CONNECT reply — to name what went wrong.
//
// Mirrors how an http upstream's CONNECT answer is classified (proxy-session.ts onUpData): every refusal
// is stage PROXY_HANDSHAKE and a 502 to the client (tunnelRefusal, upstream-tunnel.ts), whether the
// upstream could not reach the target (REP 0x03 network / 0x04 host unreachable, 0x05 refused, 0x06 TTL
// expired: squid's 502/503/504 to a CONNECT) or would not (0x02 not allowed by its rules: squid's 403);
// bad credentials are `upstream_auth_failed` as a 407 is. The reply code travels as `socksReply` where
// an http upstream's status travels as `upstreamStatus`.

export type Socks5Failure =
  /** No acceptable method (0xFF: it wants credentials we do not have), or a sub-negotiation status ≠ 0. */
  | { kind: 'auth_failed' }
  /** The CONNECT reply's REP ≠ 0x00. */
  | { kind: 'refused'; reply: number }
  /** Not a SOCKS5 answer, or a method we never offer. */
  | { kind: 'handshake_failed' }
  /** The upstream stopped answering before its reply was complete. */
  | { kind: 'closed' };

const VERSION = 0x05;
const NO_AUTH = 0x00;
const USER_PASS = 0x02;
const NO_ACCEPTABLE = 0xff;

/** `answer`: every byte the upstream sent since the TCP connection was made, in order. */
export function socks5Failure(answer: Uint8Array): Socks5Failure {
  if (answer.length < 2) return { kind: 'closed' };
  if (answer[0] !== VERSION) return { kind: 'handshake_failed' };
  const method = answer[1];
  if (method === NO_ACCEPTABLE) return { kind: 'auth_failed' };
  let at = 2;
  if (method === USER_PASS) {
    // RFC 1929 §2: VER (0x01) STATUS; any status but 0x00 is a failure.
    if (answer.length < at + 2) return { kind: 'closed' };
    if (answer[at + 1] !== 0x00) return { kind: 'auth_failed' };
    at += 2;
  } else if (method !== NO_AUTH) return { kind: 'handshake_failed' };
  // RFC 1928 §6: VER REP RSV ATYP BND.ADDR BND.PORT.
  if (answer.length < at + 2) return { kind: 'closed' };
  if (answer[at] !== VERSION) return { kind: 'handshake_failed' };
  const reply = answer[at + 1]!;
  return reply === 0x00 ? { kind: 'closed' } : { kind: 'refused', reply };
}
