// The seed's reconcileExternal (§4): the endpoint is the proxy; no provider call ever, no requeue
// (a spec edit or a health transition brings the next pass).
import { hostPort } from '../endpoint-host.js';
import { healthInstanceKey } from '../health/instance-key.js';
import { type ExternalSpec, ProvisionedReason, type ProxyResource } from '../proxy.js';
import { applyHealth, clearHealth, setProvisioned, verdictFor } from './conditions.js';
import type { Observation, Plan } from './types.js';

export function reconcileExternal(proxy: ProxyResource & { spec: ExternalSpec }, obs: Observation): Plan {
  const { host, port, protocol } = proxy.spec.endpoint;
  const { status } = proxy;
  const instance = healthInstanceKey({ ...proxy, status: { ...status, ip: host } });
  const verdict = verdictFor(obs.health, instance);
  // An edited endpoint is another proxy: the Healthy condition, latency and check time in status were
  // judged on the old one, so they go (as clearInstance drops them for a replaced managed instance)
  // rather than keep a dead endpoint Ready and leasable until the probe has failed it enough times.
  // status.ip shows a new host. The port is not in status, but the probe's state shows it: its key has the
  // port, and a state the probe restarted for this endpoint has no verdict (a verdict, once reached,
  // never returns to none; a state the probe creates from scratch is seeded from status).
  const moved = (status.ip !== null && status.ip !== host) || (obs.health !== null && verdict === null);
  const staged = setProvisioned(
    { ...(moved ? clearHealth(status) : status), ip: host },
    true,
    ProvisionedReason.ExternalEndpoint,
    `external endpoint ${protocol === 'http' ? '' : `${protocol}://`}${hostPort(host, port)}`,
    proxy.generation,
    obs.now,
  );
  return {
    branch: 'external',
    status: applyHealth(staged, verdict, proxy.generation, obs.now),
    action: null,
    requeue: { kind: 'none' },
  };
}
