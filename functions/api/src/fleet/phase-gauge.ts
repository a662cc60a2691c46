// proxyplane_proxies{phase}: the fleet by phase at every scrape of the API's /metrics (operator seed §9
// `proxy_operator_proxies{phase}`). Counted from the stored proxies, so every replica reports the same
// fleet-wide numbers: aggregate with max, not sum. A count is reused for `maxAgeMs` (any crawler token may
// scrape, at any rate: each count is seven billed aggregation queries). A failed count leaves the last
// values and is logged.
import { Gauge, type Registry } from 'prom-client';
import type { Phase } from '../../../../shared/src/domain/proxy.js';

export interface PhaseGaugeOptions {
  maxAgeMs: number;
  nowMs: () => number;
  onError?: (err: unknown) => void;
}

export function promProxyPhaseGauge(
  registry: Registry,
  countByPhase: () => Promise<Record<Phase, number>>,
  opts: PhaseGaugeOptions,
): void {
  let last: { at: number; counts: Promise<Record<Phase, number>> } | null = null;
  const counts = () => {
    const now = opts.nowMs();
    if (!last || now - last.at >= opts.maxAgeMs) {
      const pending = countByPhase();
      last = { at: now, counts: pending };
      // A failed count is not reused: the next scrape asks again.
      pending.catch(() => {
        if (last?.counts === pending) last = null;
      });
    }
    return last.counts;
  };
  new Gauge({
    name: 'proxyplane_proxies',
    help: 'Proxies by phase, over the whole fleet.',
    labelNames: ['phase'] as const,
    registers: [registry],
    async collect() {
      try {
        for (const [phase, n] of Object.entries(await counts())) this.set({ phase }, n);
      } catch (err) {
        opts.onError?.(err);
      }
    },
  });
}
