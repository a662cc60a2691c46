// Stops what the plane started, newest first (children before the emulators they talk to). A step
// added after stopping began (a start that was still in flight at Ctrl-C) is stopped at once, so
// nothing started during a shutdown survives it.
export type StopStep = () => Promise<void>;

export class Teardown {
  private readonly steps: Array<{ name: string; stop: StopStep }> = [];
  private readonly late: Promise<void>[] = [];
  private running: Promise<string[]> | undefined;

  constructor(private readonly log: (line: string) => void = () => {}) {}

  get stopping(): boolean {
    return this.running !== undefined;
  }

  add(name: string, stop: StopStep): void {
    if (this.running) this.late.push(this.runStep({ name, stop }, []));
    else this.steps.push({ name, stop });
  }

  /** Runs every step once; later calls return the same result. Resolves to the failures, if any. */
  run(): Promise<string[]> {
    this.running ??= (async () => {
      const failures: string[] = [];
      for (const step of this.steps.reverse()) await this.runStep(step, failures);
      await Promise.all(this.late);
      return failures;
    })();
    return this.running;
  }

  private async runStep(step: { name: string; stop: StopStep }, failures: string[]): Promise<void> {
    try {
      await step.stop();
      this.log(`stopped ${step.name}`);
    } catch (err) {
      failures.push(`${step.name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
