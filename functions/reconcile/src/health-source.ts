// The applyHealth seam (seed §6): the probe owns health state (`health/{proxy}`, ports/health-store.ts);
// reconcile reads the proxy-level verdict and represents it in status. Counters belong to one instance, so
// a verdict about a replaced instance is ignored (the probe keys its state the same way).
import { healthVerdictOf } from '../../../shared/src/domain/health/proxy-health.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import type { HealthVerdict } from '../../../shared/src/domain/reconcile/types.js';
import type { HealthStore } from '../../../shared/src/ports/health-store.js';

export interface HealthSource {
  verdictFor(proxy: ProxyResource): Promise<HealthVerdict | null>;
}

/** No health input: Provisioned=True stays phase Provisioned. */
export const noHealth: HealthSource = { verdictFor: async () => null };

/** The instance the probe's counters belong to (functions/probe/src/probe-pass.ts instanceOf). */
export function probedInstanceOf(p: ProxyResource): string {
  if (p.spec.mode === 'external') return `${p.spec.endpoint.host}:${p.spec.endpoint.port}`;
  return p.status.providerId ?? p.status.ip ?? '';
}

export function storeHealthSource(store: Pick<HealthStore, 'get'>): HealthSource {
  return {
    async verdictFor(proxy) {
      const instance = probedInstanceOf(proxy);
      // No instance yet, or going away: nothing to probe, and no read spent on it.
      if (proxy.deletionRequestedAt || instance === '') return null;
      const state = await store.get(proxy.name);
      if (!state || state.instance !== instance) return null;
      // The probe owns what its verdict means in status (reason, message, time): domain/health.
      return healthVerdictOf(state);
    },
  };
}
