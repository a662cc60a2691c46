// The status of a managed proxy whose instance is Running: Provisioned=True, the instance's address, the
// credentials version it serves, and the probe's verdict about that very instance.
import { healthInstanceKey } from '../health/instance-key.js';
import {
  ConditionType,
  type ManagedSpec,
  ProvisionedReason,
  type ProxyResource,
  type ProxyStatus,
} from '../proxy.js';
import { servedRefOf } from '../served-credentials.js';
import {
  addressMoved,
  applyHealth,
  clearHealth,
  findCondition,
  setProvisioned,
  verdictFor,
} from './conditions.js';
import type { Observation, ObservedInstance } from './types.js';

export type Managed = ProxyResource & { spec: ManagedSpec };

/** Provisioned=True for a Running instance, with the probe's verdict about it (the address is served). */
export function serving(
  proxy: Managed,
  obs: Observation,
  inst: ObservedInstance,
  reason: string,
  message: string,
): ProxyStatus {
  const { now } = obs;
  const gen = proxy.generation;
  const base = restartedAt(proxy, inst, now) ?? afterNotServing(proxy) ?? proxy;
  const staged = setProvisioned(withServed(base, inst), true, reason, message, gen, now);
  // Only a verdict about the instance this status now describes (instance-key.ts).
  const verdict = verdictFor(obs.health, healthInstanceKey({ ...proxy, status: staged }));
  return applyHealth(staged, verdict, gen, now);
}

/**
 * A serving instance that the status shows serving at another address was stopped and started again
 * between two passes (conditions.ts addressMoved): another boot of the same name, like one seen booting.
 * What the probe said was about the old address — which GCE released, and another project's VM may have —
 * so the verdict goes, and Provisioned turns True anew: a new incarnation key (instance-key.ts), under
 * which the probe judges the instance afresh before it is Ready again. null: the same address, or none
 * known before (the first Running pass).
 */
function restartedAt(proxy: Managed, inst: ObservedInstance, now: Date): Managed | null {
  const { status } = proxy;
  const wasServing = findCondition(status, ConditionType.Provisioned)?.status === 'True';
  if (!wasServing || !addressMoved(status, inst)) return null;
  const message = `instance restarted: its address moved from ${status.ip} to ${inst.ip}`;
  return {
    ...proxy,
    status: setProvisioned(
      clearHealth(status),
      false,
      ProvisionedReason.Provisioning,
      message,
      proxy.generation,
      now,
    ),
  };
}

/**
 * A status that did not show the instance serving (Provisioned False: a latched PermanentError, a
 * CloudInitError, a missing provider — with the VM running all along) may still carry the Healthy verdict
 * from before: the probe skips such a proxy, and nothing took the verdict away. Provisioned turning True
 * starts a new incarnation key, under which the probe has judged nothing, so that old verdict would make
 * the proxy Ready — leasable — on a judgement minutes or days old, about an address it may no longer have.
 * It goes, as when the instance restarts. null: the status showed it serving (its verdicts are its own).
 */
function afterNotServing(proxy: Managed): Managed | null {
  if (findCondition(proxy.status, ConditionType.Provisioned)?.status === 'True') return null;
  return { ...proxy, status: clearHealth(proxy.status) };
}

/**
 * Whether staging `next` over `before` records the first Healthy verdict about the instance: a replacement
 * ends when its new instance proves healthy, not when it boots, so that pass frees the proxy's slot (if it
 * holds one). So a change that breaks the proxy — an image that boots and serves nothing — stops at
 * RECONCILE_MAX_REPLACING broken proxies instead of rolling through the fleet at boot speed; one that never
 * turns healthy frees its slot only when the slot goes stale (replacement-slots.ts). Whatever arm stages
 * it (running, or serving through a CloudInitError), so a steady proxy asks nothing.
 */
export function provesHealthy(before: ProxyStatus, next: ProxyStatus): boolean {
  const healthy = (s: ProxyStatus) => findCondition(s, ConditionType.Healthy)?.status === 'True';
  const wasServing = findCondition(before, ConditionType.Provisioned)?.status === 'True';
  return healthy(next) && !(wasServing && healthy(before));
}

/**
 * The instance's address and the credentials version it serves (status.servedCredentials,
 * served-credentials.ts): what leases, the probe and the snapshots hand out. The metadata names the
 * version reconcile resolved when it created the instance. The default cloud-init reads exactly that one;
 * a proxy's own cloud-init reads it or `latest` at boot, seconds later — the same version, since a newer
 * one replaces such an instance at once (only the default cloud-init waits for a slot). Either way it is
 * a better answer than the spec's `latest` through a reader's cache, which after a rotation still gives
 * the old password for up to a minute. An instance that does not say leaves clients on the spec's
 * reference.
 */
function withServed(proxy: Managed, inst: ObservedInstance): ProxyStatus {
  const { servedCredentials: _old, ...status } = proxy.status;
  const served = servedRefOf(inst.serves?.credentialsSecret);
  return { ...status, ip: inst.ip, ...(served ? { servedCredentials: served } : {}) };
}

/**
 * Whether clients can keep using a Running instance on what it serves now, whatever the spec resolves to:
 * the default cloud-init (the plane knows what it set up), the spec's port, and a credentials version that
 * can still be read (`unknown`, a Secret Manager blip, is no reason to take it down). Its version is then
 * what clients are handed (status.servedCredentials).
 */
export function servesReadableCredentials(proxy: Managed, obs: Observation, inst: ObservedInstance): boolean {
  if (proxy.spec.cloudInit !== undefined || inst.serves?.port !== proxy.spec.port) return false;
  const state = obs.servedCredentials;
  return (
    servedRefOf(inst.serves.credentialsSecret) !== undefined && (state === 'readable' || state === 'unknown')
  );
}
