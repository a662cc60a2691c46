// Which instance a proxy's health state is about. The probe keys its counters with it (probe-pass,
// passive-pass), and reconcile folds a verdict into status only when the verdict's key is the key of the
// status it stages (reconcile/conditions.ts verdictFor): health evidence about one instance must never
// describe another (seed §6: a replaced instance starts with fresh counters).
import type { ProxyResource } from '../proxy.js';

/**
 * The instance key of a proxy as `status` describes it; '' when the status names no instance to judge.
 * External: the address the probe actually dials — status.ip (reconcile's copy of the endpoint host) and
 * the endpoint port — so a probe that ran between an endpoint edit and the reconcile pass that moves
 * status.ip is never filed under the new endpoint.
 */
export function healthInstanceKey(p: Pick<ProxyResource, 'spec' | 'status'>): string {
  if (p.spec.mode === 'external') return p.status.ip ? `${p.status.ip}:${p.spec.endpoint.port}` : '';
  return p.status.providerId ?? p.status.ip ?? '';
}
