// proxyplane_proxies{phase}: the fleet by phase at every scrape of the API's /metrics (operator seed §9
// `proxy_operator_proxies{phase}`). Counted from the stored proxies, so every replica reports the same
// fleet-wide numbers: aggregate with max, not sum. A failed count leaves the last values and is logged.
import { Gauge, type Registry } from 'prom-client';
import type { Phase } from '../../../../shared/src/domain/proxy.js';

export function promProxyPhaseGauge(
  registry: Registry,
  countByPhase: () => Promise<Record<Phase, number>>,
  onError: (err: unknown) => void = () => {},
): void {
  new Gauge({
    name: 'proxyplane_proxies',
    help: 'Proxies by phase, over the whole fleet.',
    labelNames: ['phase'] as const,
    registers: [registry],
    async collect() {
      try {
        const counts = await countByPhase();
        for (const [phase, n] of Object.entries(counts)) this.set({ phase }, n);
      } catch (err) {
        onError(err);
      }
    },
  });
}
