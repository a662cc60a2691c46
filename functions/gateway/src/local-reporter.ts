// Standalone mode's Reporter: no controller to report to, so it drains the outcome queue at a bounded
// interval (keeping it from filling up) and logs a summary at debug level.
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
      const failed = outcomes.filter((o) => !o.ok).length;
      this.log.debug('outcomes', { total: outcomes.length, failed, runtime: view.runtimeCounts().length });
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
