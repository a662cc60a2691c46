// A proxy's `healthCheck.url` is stored in Firestore, shown by GET and listed to every crawler, and sent
// through the proxy as the probe's request target: a `user:password@` in it would put that password in all
// of those (invariant 7), and the probe never uses it as a credential (it authenticates to the proxy with
// credentialsRef's secret). The admin API refuses such a URL with a 400, as the gateway routing refuses one
// in a route's targetCheck. Only a URL being set counts: a stored one is never a reason to refuse another
// edit of that proxy (endpoint-host.ts does the same).
import type { ProxySpec } from './proxy.js';

// An authority with an '@' in it, as TargetCheck refuses; and what WHATWG URL parsing finds as userinfo.
const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

/** Whether `url` carries a userinfo part (`user:pw@`, `:token@`, `user@`, even an empty `@`). */
export function urlCarriesCredentials(url: string): boolean {
  if (USERINFO.test(url)) return true;
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false;
  }
}

/** Whether `next` sets a health-check URL with credentials in it (one `current` already has is not refused). */
export function refusedHealthCheckUrl(next: ProxySpec, current?: ProxySpec): boolean {
  const url = next.healthCheck.url;
  if (url === undefined || url === current?.healthCheck.url) return false;
  return urlCarriesCredentials(url);
}

/**
 * The `healthCheck.expectedStatus` `next` sets that no check can see: a 1xx is an interim answer (Node's
 * HTTP client hands it to 'information', never as the response), so every BASIC check failed with the
 * final status and the proxy never turned Healthy — as a route's targetCheck refuses one (TargetCheck).
 * Read as before (stored ones still parse); one `current` already has is not refused.
 */
export function unreachableExpectedStatus(next: ProxySpec, current?: ProxySpec): number | null {
  const status = next.healthCheck.expectedStatus;
  if (status >= 200 || status === current?.healthCheck.expectedStatus) return null;
  return status;
}
