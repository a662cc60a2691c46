// Which address a request came from: the key of the failed-authentication limit (auth-failure-limit.ts).
//
// On Cloud Run a request reaches the container through Google's front end, which appends the address it
// accepted the connection from to X-Forwarded-For — as the last entry: whatever the client sent in its own
// X-Forwarded-For stays in front of it, unchecked (a client that wants another bucket writes any address
// there). So the trustworthy entry is the one `trustedHops` from the end — 1 on Cloud Run, where the API is
// reached at its run.app URL and nothing else forwards (docs/api.md § Rate limits) — and never the first.
// Without a front end (`npm start`, tests on a socket) the header is anyone's to write and is ignored: the
// address is the socket's peer. /v1/echo reads the header the same way (echo-routes.ts), with the same
// trustedHops (wiring.ts).
import { isIP } from 'node:net';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

/** X-Forwarded-For's entries, in order, trimmed, empty ones dropped. */
export function forwardedFor(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The client's address: the X-Forwarded-For entry `trustedHops` from the end when there are that many
 * (the one the trusted front end added), else the socket's peer; with trustedHops 0, always the peer.
 */
export function clientAddress(
  xForwardedFor: string | undefined,
  trustedHops: number,
  peer: string | undefined,
): string | undefined {
  if (trustedHops > 0) {
    const entries = forwardedFor(xForwardedFor);
    if (entries.length >= trustedHops) return entries[entries.length - trustedHops];
  }
  return peer;
}

/** The socket's peer address of a request served by @hono/node-server; undefined without a socket. */
export function peerAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined;
  }
}

/** The 16-bit groups of an IPv6 address (isIP already said it is one), an IPv4 tail folded in. */
function v6Groups(address: string): number[] {
  let s = address.split('%')[0]!; // a zone id (fe80::1%eth0) is the host's, not the address's
  const v4Tail = s.match(/^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (v4Tail) {
    const [a, b, c, d] = v4Tail.slice(2).map(Number) as [number, number, number, number];
    s = `${v4Tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => Number.parseInt(g, 16));
}

/**
 * The limit's key for an address: an IPv4 address as it is (an IPv4-mapped IPv6 one as its IPv4 address),
 * an IPv6 address as its /64 — the block one subscriber is usually given, in which a client can pick a new
 * address for every request. An entry that is not an address (no trusted front end writes one) is kept
 * as it is, cut short so that it cannot grow the map's memory; no address at all is one shared key.
 */
export function sourceKey(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const kind = isIP(address.split('%')[0]!);
  if (kind === 4) return address;
  if (kind !== 6) return `other:${address.slice(0, 64)}`;
  const g = v6Groups(address);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`;
  }
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}
