// The probe recorder on prom-client (seed §9: fed vectors observe EVERY probe, status writes are
// transition-only; a pruned proxy's series are removed). A fresh Registry per process, no global default.
import { Counter, Histogram, type Registry } from 'prom-client';

export class PromProbeMetrics {
  private readonly duration: Histogram<'proxy' | 'tier'>;
  private readonly failures: Counter<'proxy' | 'tier'>;

  constructor(registry: Registry) {
    this.duration = new Histogram({
      name: 'proxyplane_healthcheck_duration_seconds',
      help: 'Duration of each health probe through a proxy, by proxy and tier.',
      labelNames: ['proxy', 'tier'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.failures = new Counter({
      name: 'proxyplane_healthcheck_failures_total',
      help: 'Failed health probes, by proxy and tier.',
      labelNames: ['proxy', 'tier'],
      registers: [registry],
    });
  }

  observe(proxy: string, tier: string, seconds: number, ok: boolean): void {
    this.duration.observe({ proxy, tier }, seconds);
    if (!ok) this.failures.inc({ proxy, tier });
  }

  forget(proxy: string): void {
    for (const tier of ['BASIC', 'EGRESS']) {
      this.duration.remove({ proxy, tier });
      this.failures.remove({ proxy, tier });
    }
  }
}
