// Where a crawler connects: the one place that knows managed proxies listen on status.ip:spec.port and
// external ones on spec.endpoint.
import type { ProxyCredentials } from '../cloud-init/credentials.js';
import type { ProxyProtocol, ProxyResource } from '../proxy.js';

export interface ProxyEndpoint {
  host: string;
  port: number;
  protocol: ProxyProtocol;
}

/** null while a managed proxy has no address yet: such a proxy cannot be leased. */
export function proxyEndpoint(proxy: ProxyResource): ProxyEndpoint | null {
  const { spec } = proxy;
  if (spec.mode === 'external') return { ...spec.endpoint };
  if (!proxy.status.ip) return null;
  return { host: proxy.status.ip, port: spec.port, protocol: spec.protocol };
}

/**
 * The proxy URL handed to a crawler: `http://…`, or `socks5://…` for a SOCKS5 endpoint (the scheme curl,
 * Python requests and Node's socks agents read; a crawler that wants the proxy to resolve names may
 * rewrite it to `socks5h://`). `credentials` are spec.credentialsRef's value as parseProxyCredentials
 * read it (never the raw payload: a trailing newline would end up in the password); both parts are
 * percent-encoded so that any character survives in the userinfo part (RFC 3986 §3.2.1).
 */
export function proxyUrl(endpoint: ProxyEndpoint, credentials: ProxyCredentials | null): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  const userinfo = credentials
    ? `${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@`
    : '';
  return `${endpoint.protocol}://${userinfo}${host}:${endpoint.port}`;
}
