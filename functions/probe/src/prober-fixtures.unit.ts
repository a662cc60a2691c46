// The echo endpoint answering the prober itself (Prober.direct), for the probe's unit tests: an EGRESS
// failure through a proxy then counts against the proxy (tiers.ts).
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import { condition } from '../../../shared/src/testing/healthy-conditions.js';
import { aProxy } from '../../../shared/src/testing/proxy-fixtures.js';
import type { Prober } from './tiers.js';

export const echoUp: Prober['direct'] = async () => ({
  ok: true,
  latencyMs: 1,
  status: 200,
  body: JSON.stringify({ ip: '192.0.2.1', headers: {} }),
  failure: null,
});

/**
 * A managed proxy whose status still shows an address though its Provisioned condition says its instance is
 * not serving (latched on a failed delete, written before addresses were cleared): never dialed.
 */
export const stoppedWithAddress = (at: Date): ProxyResource =>
  aProxy({
    name: 'stopped',
    status: {
      ip: '10.0.0.7',
      providerId: 'zones/z/instances/stopped',
      conditions: [condition('Provisioned', 'False', 'PermanentError', at)],
    },
  });
