// The applyHealth seam (seed §6): the probe owns health state (`health/{proxy}`, ports/health-store.ts);
// reconcile reads it and represents the proxy-level verdict in status. Counters belong to one instance:
// the state says which (domain/health/instance-key.ts), and the reconcile domain folds the verdict only
// into a status that describes that same instance (reconcile/conditions.ts verdictFor).
import { healthVerdictOf } from '../../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import type { HealthObservation } from '../../../shared/src/domain/reconcile/types.js';
import type { HealthStore } from '../../../shared/src/ports/health-store.js';

export interface HealthSource {
  verdictFor(proxy: ProxyResource): Promise<HealthObservation | null>;
}

/** No health input: Provisioned=True stays phase Provisioned. */
export const noHealth: HealthSource = { verdictFor: async () => null };

export function storeHealthSource(store: Pick<HealthStore, 'get'>): HealthSource {
  return {
    async verdictFor(proxy) {
      // Going away, or a managed proxy still without an instance: nothing to fold, no read spent on it.
      if (proxy.deletionRequestedAt) return null;
      if (proxy.spec.mode === 'managed' && proxy.status.providerId === null) return null;
      const state = await store.get(proxy.name);
      if (!state) return null;
      // The probe owns what its verdict means in status (reason, message, time): domain/health.
      return { instance: state.instance, verdict: healthVerdictOf(state) };
    },
  };
}
