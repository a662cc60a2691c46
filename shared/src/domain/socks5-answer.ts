// What a failed SOCKS5 handshake was, read back from the bytes the proxy answered (RFC 1928 §3, §6; RFC
// 1929 §2). The `socks` package runs the handshake but reports its failures as message text only, and
// failures are classified by code, never by text (style.md): so this names the failure from the proxy's
// own answers — method choice, sub-negotiation status, CONNECT reply. The probe (adapters/probe/
// socks5-connect.ts) and the gateway (functions/gateway/src/socks5-failure.ts) both read them with this.

export type Socks5Answer =
  /** No acceptable method (0xFF: it wants credentials we did not offer), or a sub-negotiation status ≠ 0. */
  | { kind: 'auth_failed' }
  /** The CONNECT reply's REP ≠ 0x00: the proxy could not, or would not, reach the target. */
  | { kind: 'refused'; reply: number }
  /** Not a SOCKS5 answer (an HTTP proxy, say), or a method we never offer. */
  | { kind: 'not_socks5' }
  /** The proxy stopped answering before its reply was complete. */
  | { kind: 'closed' };

const VERSION = 0x05;
const NO_AUTH = 0x00;
const USER_PASS = 0x02;
const NO_ACCEPTABLE = 0xff;

/** `answer`: every byte the proxy sent since the TCP connection was made, in order. */
export function socks5Answer(answer: Uint8Array): Socks5Answer {
  if (answer.length < 2) return { kind: 'closed' };
  if (answer[0] !== VERSION) return { kind: 'not_socks5' };
  const method = answer[1];
  if (method === NO_ACCEPTABLE) return { kind: 'auth_failed' };
  let at = 2;
  if (method === USER_PASS) {
    // RFC 1929 §2: VER (0x01) STATUS; any status but 0x00 is a failure.
    if (answer.length < at + 2) return { kind: 'closed' };
    if (answer[at + 1] !== 0x00) return { kind: 'auth_failed' };
    at += 2;
  } else if (method !== NO_AUTH) return { kind: 'not_socks5' };
  // RFC 1928 §6: VER REP RSV ATYP BND.ADDR BND.PORT.
  if (answer.length < at + 2) return { kind: 'closed' };
  if (answer[at] !== VERSION) return { kind: 'not_socks5' };
  const reply = answer[at + 1]!;
  return reply === 0x00 ? { kind: 'closed' } : { kind: 'refused', reply };
}

/**
 * The probe's failure code for it, as an HTTP proxy's are named: bad or missing credentials are
 * `proxy_auth_required` as a 407 is; a refused CONNECT is `socks_reply_<REP>` as an HTTP proxy's is
 * `connect_status_<status>`; a proxy that hangs up mid-handshake is `econnreset` as over HTTP.
 */
export function socks5FailureCode(a: Socks5Answer): string {
  switch (a.kind) {
    case 'auth_failed':
      return 'proxy_auth_required';
    case 'refused':
      return `socks_reply_${a.reply}`;
    case 'not_socks5':
      return 'not_socks5';
    case 'closed':
      return 'econnreset';
  }
}
