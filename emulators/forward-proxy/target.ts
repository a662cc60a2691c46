// Where a proxied request goes: the authority of a CONNECT (RFC 9110 §9.3.6, "host:port", IPv6 in
// brackets) or the absolute-form target of a forwarded request (RFC 9112 §3.2.2).

export interface Target {
  host: string;
  port: number;
}

export interface AbsoluteTarget extends Target {
  /** origin-form path + query, what the upstream server sees on its request line */
  path: string;
  /** `host[:port]` of the URI (no userinfo): the Host field the origin must see (RFC 9112 §3.2.2) */
  authority: string;
}

const HOSTNAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;

function parsePort(text: string): number | null {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : null;
}

/** `host:port` or `[v6]:port`; the port is required, as RFC 9110 requires for CONNECT. */
export function parseAuthority(authority: string): Target | null {
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close < 0 || authority[close + 1] !== ':') return null;
    const host = authority.slice(1, close);
    const port = parsePort(authority.slice(close + 2));
    return IPV6.test(host) && port !== null ? { host, port } : null;
  }
  const colon = authority.lastIndexOf(':');
  if (colon <= 0) return null;
  const host = authority.slice(0, colon);
  const port = parsePort(authority.slice(colon + 1));
  return HOSTNAME.test(host) && port !== null ? { host, port } : null;
}

/** Only `http:` absolute URIs are forwarded; TLS to the origin goes through CONNECT. */
export function parseAbsoluteTarget(url: string | undefined): AbsoluteTarget | null {
  if (!url?.slice(0, 7).toLowerCase().startsWith('http://')) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.username || parsed.password) return null;
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (!host) return null;
  const port = parsed.port ? Number(parsed.port) : 80;
  return { host, port, path: `${parsed.pathname}${parsed.search}`, authority: parsed.host };
}
