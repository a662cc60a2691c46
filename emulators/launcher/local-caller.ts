// Our emulators (Compute, Secret Manager, Scheduler) listen on loopback with no authentication: anything
// on this machine may call them, as it may the Google emulators. A web page the developer has open is on
// this machine too: it could POST to them blind (a text/plain body needs no CORS preflight and the
// emulators read it as JSON) — rotate the demo proxies' credentials, kill instances — and, through DNS
// rebinding (a name of its own answering 127.0.0.1), read their secrets. So a request is refused that a
// browser sent from a page (an Origin header that is not this machine's) or that names a host that is
// not this machine (the rebinding name). SDK clients and curl send neither.
import type { IncomingHttpHeaders } from 'node:http';
import { isLoopbackHost } from '../../shared/src/domain/gateway/ssrf.js';

/** Why a request is not a local caller's, or null when it is. */
export function foreignCaller(headers: IncomingHttpHeaders): string | null {
  const host = headers.host;
  if (host !== undefined && !isLocalAuthority(host))
    return 'the request names a host that is not this machine';
  const origin = headers.origin;
  if (origin !== undefined && !isLocalOrigin(origin)) return 'the request comes from a web page';
  return null;
}

/** An origin on this machine (`null`, a sandboxed page's, is none). */
function isLocalOrigin(origin: string): boolean {
  try {
    return isLocalAuthority(new URL(origin).host);
  } catch {
    return false;
  }
}

/** `localhost`, `*.localhost`, or a loopback address, with or without a port. */
function isLocalAuthority(authority: string): boolean {
  return isLoopbackHost(authority.replace(/:\d*$/, '').replace(/^\[(.*)\]$/, '$1'));
}
