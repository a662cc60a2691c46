// Which ports a managed proxy may listen on: the ones the proxy VMs' firewall opens (Terraform's
// google_compute_firewall.proxy_port opens tcp:var.proxy_port and nothing else). A VM on another port is
// created, boots and is never reachable by the probe, the gateway or crawlers: it sits Unhealthy with no
// hint why. The admin API refuses such a spec instead; the deployment says which ports are open.
// External proxies are not ours to firewall: their port is wherever they listen.
import type { ProxySpec } from './proxy.js';

/** The ports a managed proxy may use; null: any (no firewall of ours in front — the local plane, tests). */
export type ManagedPortPolicy = readonly number[] | null;

/**
 * The port that `next` would set and the policy does not allow, or null when the spec is acceptable.
 * Only a port being set counts: a write that keeps the port `current` already has (one stored before the
 * policy, or before the firewall changed) is not refused — refusing would freeze every other field of
 * that proxy, and changing its port to an allowed one, which is the fix, is always accepted.
 */
export function refusedManagedPort(
  next: ProxySpec,
  allowed: ManagedPortPolicy,
  current?: ProxySpec,
): number | null {
  if (allowed === null || next.mode !== 'managed') return null;
  if (current?.mode === 'managed' && current.port === next.port) return null;
  return allowed.includes(next.port) ? null : next.port;
}
