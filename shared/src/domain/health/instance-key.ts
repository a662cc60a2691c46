// Which instance a proxy's health state is about. The probe keys its counters with it (probe-pass,
// passive-pass), and reconcile folds a verdict into status only when the verdict's key is the key of the
// status it stages (reconcile/conditions.ts verdictFor): health evidence about one instance must never
// describe another (seed §6: a replaced instance starts with fresh counters).
import { ConditionType, type ProxyResource } from '../proxy.js';

/**
 * The instance key of a proxy as `status` describes it; '' when the status names no instance to judge.
 *
 * Managed: the providerId alone is not enough — instance names derive from the UID (instance-name.ts), so
 * a replacement (spec change, drift recreate, preemption) has the SAME providerId. Every path to a new
 * instance goes through reconcile's create arm, which stages Provisioned=False, and the instance is
 * Provisioned=True again only once seen Running (reconcile/managed.ts); lastTransitionTime moves only on
 * such a flip (conditions.ts setCondition). So the time Provisioned last turned True names the
 * incarnation, and while it is not True there is no running instance to judge ('').
 *
 * External: the address the probe actually dials — status.ip (reconcile's copy of the endpoint host) and
 * the endpoint port — so a probe that ran between an endpoint edit and the reconcile pass that moves
 * status.ip is never filed under the new endpoint. A SOCKS5 endpoint's key names the protocol too: the
 * same address spoken to in another protocol is another proxy (an HTTP proxy's verdict says nothing of a
 * SOCKS5 one). The proxy's UID ends the key: `health/{proxy}` is keyed by name, so a proxy deleted and
 * created again under the same name with the same endpoint before any probe tick saw the name gone (the
 * prune) would otherwise inherit the deleted proxy's counters, verdict and PASSIVE/TARGET tracks, and its
 * first reconcile pass would make it Ready on them before it was ever probed (its credentials and
 * health check may well differ). A managed key needs no UID: the providerId is derived from it.
 */
export function healthInstanceKey(p: Pick<ProxyResource, 'uid' | 'spec' | 'status'>): string {
  const { status } = p;
  if (p.spec.mode === 'external') {
    if (!status.ip) return '';
    const { port, protocol } = p.spec.endpoint;
    const address = protocol === 'http' ? `${status.ip}:${port}` : `${protocol}://${status.ip}:${port}`;
    return `${address}#${p.uid}`;
  }
  const provisioned = status.conditions.find((c) => c.type === ConditionType.Provisioned);
  if (!status.providerId || provisioned?.status !== 'True') return '';
  return `${status.providerId}@${provisioned.lastTransitionTime.toISOString()}`;
}
