// The seed's Reconcile dispatch (§2): delete first, then external, then managed. Pure: the handler
// asks observationNeeds what to observe, observes it, then calls reconcile.
import type { ExternalSpec, ManagedSpec, ProxyResource } from '../proxy.js';
import { reconcileDelete } from './delete.js';
import { reconcileExternal } from './external.js';
import { isLatched, reconcileManaged } from './managed.js';
import type { Observation, Plan, PollIntervals } from './types.js';

export interface ObservationNeeds {
  cloudInit: boolean;
  instance: boolean;
}

/**
 * What a pass must observe before deciding. A latched or provider-less proxy needs nothing (the latch
 * means no provider call at all) — but a latched one a manual request retries (`retryLatched`,
 * Observation.retryLatched) needs what any other pass does; an external one never needs anything.
 */
export function observationNeeds(
  proxy: ProxyResource,
  providerRegistered: boolean,
  retryLatched = false,
): ObservationNeeds {
  const hasInstance = proxy.status.providerId !== null;
  if (proxy.deletionRequestedAt) return { cloudInit: false, instance: hasInstance && providerRegistered };
  if (proxy.spec.mode === 'external') return { cloudInit: false, instance: false };
  if ((isLatched(proxy) && !retryLatched) || !providerRegistered)
    return { cloudInit: false, instance: false };
  return { cloudInit: true, instance: hasInstance };
}

export function reconcile(proxy: ProxyResource, obs: Observation, iv: PollIntervals): Plan {
  if (proxy.deletionRequestedAt) return reconcileDelete(proxy, obs, iv);
  if (proxy.spec.mode === 'external') {
    return reconcileExternal(proxy as ProxyResource & { spec: ExternalSpec }, obs);
  }
  return reconcileManaged(proxy as ProxyResource & { spec: ManagedSpec }, obs, iv);
}
