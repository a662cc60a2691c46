// Header rewriting for forwarded (absolute-form) requests and their responses. Hop-by-hop fields
// belong to one connection and are never passed on (RFC 9110 §7.6.1); Proxy-Authorization is
// consumed here. An anonymous proxy adds nothing that reveals the client (no Via, X-Forwarded-For,
// Forwarded) unless the leak fault asks it to, which the EGRESS health tier must then catch.

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Field names the Connection header(s) list as hop-by-hop for this message. */
function connectionTokens(raw: readonly string[]): Set<string> | null {
  let tokens: Set<string> | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name !== 'connection' && name !== 'proxy-connection') continue;
    tokens ??= new Set();
    for (const token of raw[i + 1]!.split(',')) {
      const t = token.trim().toLowerCase();
      if (t) tokens.add(t);
    }
  }
  return tokens;
}

/** A flat [name, value, …] list (the rawHeaders format) without hop-by-hop fields. */
export function endToEndHeaders(raw: readonly string[]): string[] {
  const listed = connectionTokens(raw);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed?.has(lower)) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/**
 * The fields with Host set to the request-target's authority, first, whatever the client sent: a proxy
 * given an absolute-form target must ignore the received Host and send the target's (RFC 9112 §3.2.2),
 * else the origin serves (or routes to) whichever virtual host the client named instead.
 */
export function withHost(headers: readonly string[], authority: string): string[] {
  const out = ['Host', authority];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() !== 'host') out.push(headers[i]!, headers[i + 1]!);
  }
  return out;
}

/** What a leaking (non-anonymous) proxy adds: the client's address and itself as a hop. */
export function addLeakHeaders(headers: string[], clientAddress: string): string[] {
  let forwardedFor: string | null = null;
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.toLowerCase() === 'x-forwarded-for') {
      forwardedFor = forwardedFor === null ? headers[i + 1]! : `${forwardedFor}, ${headers[i + 1]}`;
      continue;
    }
    out.push(headers[i]!, headers[i + 1]!);
  }
  const chain = forwardedFor === null ? clientAddress : `${forwardedFor}, ${clientAddress}`;
  out.push('X-Forwarded-For', chain, 'Via', '1.1 proxyplane');
  return out;
}
