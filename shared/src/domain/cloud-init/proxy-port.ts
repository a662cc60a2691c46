// The port the default cloud-init's squid listens on. 22 is sshd's on every GCE image (and what the
// console's and gcloud's SSH reach): squid could not bind it, so the renderer refuses it. One rule, read
// by the renderer (startup-script.ts) and by the admin API, which refuses such a spec with a 400 instead
// of storing a proxy whose reconcile can only latch Failed (a SpecError: functions/reconcile/src/cloud-init.ts).
// A proxy with a cloud-init of its own is not ours to judge (its script may move sshd); nor is an
// external proxy's endpoint port.
import { z } from 'zod';
import type { ProxySpec } from '../proxy.js';

export const SSHD_PORT = 22;

/** The issue code the admin API's 400 names (docs/api.md § Errors). */
export const PORT_RESERVED = 'port_reserved';

export const RESERVED_PORT_MESSAGE = `port ${SSHD_PORT} belongs to sshd`;

export const isReservedProxyPort = (port: number): boolean => port === SSHD_PORT;

/** A port the default cloud-init can render squid on. */
export const DefaultCloudInitPort = z
  .number()
  .int()
  .min(1)
  .max(65535)
  .refine((p) => !isReservedProxyPort(p), {
    message: RESERVED_PORT_MESSAGE,
    params: { issue: PORT_RESERVED },
  });

/**
 * The port `next` would have the default cloud-init render and that it cannot, or null. A write that
 * keeps such a port on a proxy already stored with it (before this check) is not refused for it — as
 * managed-ports.ts and managed-boot.ts do —; moving it to another port, the fix, always is accepted.
 */
export function reservedManagedPort(next: ProxySpec, current?: ProxySpec): number | null {
  if (next.mode !== 'managed' || next.cloudInit || !isReservedProxyPort(next.port)) return null;
  const stored = current?.mode === 'managed' && !current.cloudInit && current.port === next.port;
  return stored ? null : next.port;
}
