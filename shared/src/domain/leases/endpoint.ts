// Where a crawler connects: the one place that knows managed proxies listen on status.ip:spec.port and
// external ones on spec.endpoint.
import type { ProxyResource } from '../proxy.js';

export interface ProxyEndpoint {
  host: string;
  port: number;
  protocol: 'http';
}

/** null while a managed proxy has no address yet: such a proxy cannot be leased. */
export function proxyEndpoint(proxy: ProxyResource): ProxyEndpoint | null {
  const { spec } = proxy;
  if (spec.mode === 'external') return { ...spec.endpoint };
  if (!proxy.status.ip) return null;
  return { host: proxy.status.ip, port: spec.port, protocol: spec.protocol };
}

/**
 * The proxy URL handed to a crawler. `credentials` is the "user:pass" value of spec.credentialsRef; it is
 * percent-encoded so that any character survives in the userinfo part (RFC 3986 §3.2.1).
 */
export function proxyUrl(endpoint: ProxyEndpoint, credentials: string | null): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  let userinfo = '';
  if (credentials !== null) {
    const i = credentials.indexOf(':');
    const user = i < 0 ? credentials : credentials.slice(0, i);
    const pass = i < 0 ? '' : credentials.slice(i + 1);
    userinfo = `${encodeURIComponent(user)}:${encodeURIComponent(pass)}@`;
  }
  return `${endpoint.protocol}://${userinfo}${host}:${endpoint.port}`;
}
