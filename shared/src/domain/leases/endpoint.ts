// Where a crawler connects: the one place that knows managed proxies listen on status.ip:spec.port and
// external ones on spec.endpoint.
import type { ProxyCredentials } from '../cloud-init/credentials.js';
import { hostPort } from '../endpoint-host.js';
import type { ProxyProtocol, ProxyResource } from '../proxy.js';

export interface ProxyEndpoint {
  host: string;
  port: number;
  protocol: ProxyProtocol;
}

/**
 * One string for an endpoint, as a lease records where it was granted ("http://203.0.113.7:3128"): a
 * renewal is refused once the proxy listens elsewhere (a VM re-created on another address, an external
 * endpoint edited), since the URL the crawler holds no longer reaches it.
 */
export const endpointKey = (e: ProxyEndpoint): string => `${e.protocol}://${hostPort(e.host, e.port)}`;

/** null while a managed proxy has no address yet: such a proxy cannot be leased. */
export function proxyEndpoint(proxy: ProxyResource): ProxyEndpoint | null {
  const { spec } = proxy;
  if (spec.mode === 'external') return { ...spec.endpoint };
  if (!proxy.status.ip) return null;
  return { host: proxy.status.ip, port: spec.port, protocol: spec.protocol };
}

/**
 * Whether the proxy no longer listens where a lease was granted (`granted`, its endpointKey) — its VM
 * re-created on another address (a preemption, a rolling replacement, a credentials rotation keep its
 * uid), an external endpoint edited — so the URL the crawler holds reaches something else, or nothing: such
 * a lease is not renewed. A lease stored before endpoints were recorded (null) never is; no address at all
 * (a VM being re-created) is no move yet.
 */
export function listensElsewhere(granted: string | null, proxy: ProxyResource): boolean {
  const now = proxyEndpoint(proxy);
  return granted !== null && now !== null && endpointKey(now) !== granted;
}

/**
 * The proxy URL handed to a crawler: `http://…`, or `socks5://…` for a SOCKS5 endpoint (the scheme curl,
 * Python requests and Node's socks agents read; a crawler that wants the proxy to resolve names may
 * rewrite it to `socks5h://`). `credentials` are spec.credentialsRef's value as parseProxyCredentials
 * read it (never the raw payload: a trailing newline would end up in the password); both parts are
 * percent-encoded so that any character survives in the userinfo part (RFC 3986 §3.2.1).
 */
export function proxyUrl(endpoint: ProxyEndpoint, credentials: ProxyCredentials | null): string {
  const userinfo = credentials
    ? `${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@`
    : '';
  return `${endpoint.protocol}://${userinfo}${hostPort(endpoint.host, endpoint.port)}`;
}
