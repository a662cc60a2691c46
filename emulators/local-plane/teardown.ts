// Stops what the plane started, by layer: the highest layer first (the scheduler, then the gateway, which
// reports to the API, then the functions and the API, then our emulators, then Google's), the pieces of
// one layer together. So every piece
// stops before what it talks to. A step added after stopping began (a start still in flight at
// Ctrl-C) is stopped at once, so nothing started during a shutdown survives it.
export type StopStep = () => Promise<void>;

/** Higher layers stop first. */
export const Layer = {
  googleEmulators: 0,
  clients: 1,
  ourEmulators: 2,
  services: 3,
  gateway: 4,
  scheduler: 5,
} as const;

interface Step {
  name: string;
  stop: StopStep;
  layer: number;
}

export class Teardown {
  private readonly steps: Step[] = [];
  private readonly late: Promise<void>[] = [];
  /** Failures of the steps stopped at once because they came after stopping began. */
  private readonly lateFailures: string[] = [];
  private running: Promise<string[]> | undefined;
  private readonly aborter = new AbortController();

  constructor(private readonly log: (line: string) => void = () => {}) {}

  get stopping(): boolean {
    return this.running !== undefined;
  }

  /**
   * Aborted as stopping begins: a start step that waits long (the emulators' JVMs, up to their readiness
   * timeout) gives up at once and stops what it spawned, rather than holding a Ctrl-C for a minute.
   */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  add(name: string, stop: StopStep, layer: number = Layer.services): void {
    if (this.running) this.late.push(this.runStep({ name, stop, layer }, this.lateFailures));
    else this.steps.push({ name, stop, layer });
  }

  /**
   * Runs every step once; later calls share that run. Resolves, with the failures if any, once every
   * step (and every step added late, up to this call) has stopped.
   */
  async run(): Promise<string[]> {
    if (!this.running) {
      this.running = this.stopAll();
      this.aborter.abort();
    }
    const failures = await this.running;
    await Promise.all(this.late);
    return [...failures, ...this.lateFailures];
  }

  private async stopAll(): Promise<string[]> {
    const failures: string[] = [];
    const layers = [...new Set(this.steps.map((s) => s.layer))].sort((a, b) => b - a);
    for (const layer of layers) {
      const steps = this.steps.filter((s) => s.layer === layer);
      await Promise.all(steps.map((s) => this.runStep(s, failures)));
    }
    return failures;
  }

  private async runStep(step: Step, failures: string[]): Promise<void> {
    try {
      await step.stop();
      this.log(`stopped ${step.name}`);
    } catch (err) {
      failures.push(`${step.name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
