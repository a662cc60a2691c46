// The seed's reconcileExternal (§4): the endpoint is the proxy; no provider call ever, no requeue
// (a spec edit or a health transition brings the next pass).
import { type ExternalSpec, ProvisionedReason, type ProxyResource } from '../proxy.js';
import { applyHealth, setProvisioned } from './conditions.js';
import type { Observation, Plan } from './types.js';

export function reconcileExternal(proxy: ProxyResource & { spec: ExternalSpec }, obs: Observation): Plan {
  const { host, port } = proxy.spec.endpoint;
  const staged = setProvisioned(
    { ...proxy.status, ip: host },
    true,
    ProvisionedReason.ExternalEndpoint,
    `external endpoint ${host}:${port}`,
    proxy.generation,
    obs.now,
  );
  return {
    branch: 'external',
    status: applyHealth(staged, obs.health, proxy.generation, obs.now),
    action: null,
    requeue: { kind: 'none' },
  };
}
