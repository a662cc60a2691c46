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
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { formatIpv6, parseIp, unmapped } from '../../../../shared/src/domain/gateway/ip.js';

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

/**
 * The limit's key for an address: an IPv4 address as it is (an IPv4-mapped IPv6 one as its IPv4 address),
 * an IPv6 address as its /64 — the block one subscriber is usually given, in which a client can pick a new
 * address for every request. An entry that is not an address (no trusted front end writes one) is kept
 * as it is, cut short so that it cannot grow the map's memory; no address at all is one shared key.
 */
export function sourceKey(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const parsed = parseIp(address);
  if (!parsed) return `other:${address.slice(0, 64)}`;
  const ip = unmapped(parsed);
  if (ip.family === 4) return ip.bytes.join('.');
  const block = ip.bytes.slice();
  block.fill(0, 8);
  return `${formatIpv6(block)}/64`;
}
