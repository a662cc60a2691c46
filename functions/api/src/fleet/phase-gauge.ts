// proxyplane_proxies{phase}: the fleet by phase at every scrape of the API's /metrics (operator seed §9
// `proxy_operator_proxies{phase}`). Counted from the stored proxies, so every replica reports the same
// fleet-wide numbers: aggregate with max, not sum. A count is reused for `maxAgeMs` (any crawler token may
// scrape, at any rate: each count is seven billed aggregation queries), one count at a time; a failed
// count leaves the last values, is logged once and also waits `maxAgeMs` before the next (reused-read.ts:
// a Firestore outage is no reason to ask on every scrape).
import { Gauge, type Registry } from 'prom-client';
import type { Phase } from '../../../../shared/src/domain/proxy.js';
import { reusedRead } from '../reused-read.js';

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
  const counts = reusedRead(countByPhase, {
    maxAgeMs: opts.maxAgeMs,
    nowMs: opts.nowMs,
    onError: opts.onError ?? (() => {}),
  });
  new Gauge({
    name: 'proxyplane_proxies',
    help: 'Proxies by phase, over the whole fleet.',
    labelNames: ['phase'] as const,
    registers: [registry],
    async collect() {
      for (const [phase, n] of Object.entries((await counts()) ?? {})) this.set({ phase }, n);
    },
  });
}
