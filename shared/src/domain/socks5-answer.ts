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

/** RFC 1928 §5's address types: IPv4, a host name, IPv6. */
const ADDRESS_TYPES = [0x01, 0x03, 0x04];

/** Byte `i` of what arrived in `chunks`, without joining them (undefined past the end). */
function byteAt(chunks: readonly Uint8Array[], i: number): number | undefined {
  for (const c of chunks) {
    if (i < c.length) return c[i];
    i -= c.length;
  }
  return undefined;
}

/**
 * Whether what the proxy answered so far is exactly its consent to the CONNECT's being sent — the method
 * choice (no authentication), or user/password and the credentials accepted — and not one byte of the
 * CONNECT's reply. A proxy stopped there is waiting on the target (RFC 1928 §6: the reply comes once it
 * has connected), not stalling itself: a handshake timed out there is evidence about the target, as an
 * http proxy's CONNECT that got no byte of an answer is. Whether the CONNECT did go out is the caller's to
 * tell (the `socks` package sends it as soon as it reads this much).
 * `chunks`: every byte the proxy sent since the TCP connection was made, in order.
 */
export function awaitingConnectReply(chunks: readonly Uint8Array[]): boolean {
  let length = 0;
  for (const c of chunks) length += c.length;
  if (byteAt(chunks, 0) !== VERSION) return false;
  const method = byteAt(chunks, 1);
  if (method === NO_AUTH) return length === 2;
  // RFC 1929 §2: VER STATUS, 0x00 the credentials accepted.
  return method === USER_PASS && length === 4 && byteAt(chunks, 3) === 0x00;
}

/**
 * Whether a reply the `socks` package took as granted has an address type it could read. With any other
 * ATYP it reads no address and consumes nothing, yet reports the tunnel established, and re-emits the
 * reply's bytes as the target's — the gateway's client, or the probe's TLS or HTTP exchange, would get
 * `05 00 00 …` as the first bytes of the tunnel.
 * `chunks`: every byte the upstream sent, in order; the package granted it, so the method choice is
 * 0x00 or 0x02 (then a two-byte sub-negotiation status) and the reply's ATYP is its fourth byte.
 */
export function grantedReplyReadable(chunks: readonly Uint8Array[]): boolean {
  const reply = byteAt(chunks, 1) === 0x02 ? 4 : 2;
  const atyp = byteAt(chunks, reply + 3);
  return atyp !== undefined && ADDRESS_TYPES.includes(atyp);
}
