// The echo endpoint answering the prober itself (Prober.direct), for the probe's unit tests: an EGRESS
// failure through a proxy then counts against the proxy (tiers.ts).
import type { Prober } from './tiers.js';

export const echoUp: Prober['direct'] = async () => ({
  ok: true,
  latencyMs: 1,
  status: 200,
  body: JSON.stringify({ ip: '192.0.2.1', headers: {} }),
  failure: null,
});
