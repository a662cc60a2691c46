// Standalone mode's Reporter: no controller to report to, so it drains the outcome queue at a bounded
// interval (keeping it from filling up) and logs a summary at debug level: totals and failures by stage.
import type { Logger } from './logger.js';
import type { Reporter, RuntimeView } from './session.js';

export class LocalReporter implements Reporter {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = 5_000,
  ) {}

  start(view: RuntimeView): void {
    this.timer = setInterval(() => {
      const outcomes = view.takeOutcomes(Number.MAX_SAFE_INTEGER);
      if (outcomes.length === 0) return;
      // Failures by stage: what a controller's passive track would tally (DIAL, PROXY_HANDSHAKE, …).
      const failedByStage: Record<string, number> = {};
      let failed = 0;
      for (const o of outcomes) {
        if (o.ok) continue;
        failed++;
        failedByStage[o.stage] = (failedByStage[o.stage] ?? 0) + 1;
      }
      this.log.debug('outcomes', {
        total: outcomes.length,
        failed,
        failedByStage,
        runtime: view.runtimeCounts().length,
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
