// One shutdown per process, whatever start-up has reached when it is asked for (SIGTERM/SIGINT, or a
// session error no retry can fix): before registration, while the register call is in flight, during the
// start wait, or once listening (docs/gateway.md § Shutdown). main.ts installs the signal handlers before
// start-up begins and hands this its pieces as they come; a second request while one runs is only logged.
import type { Logger } from './logger.js';

export interface Stoppable {
  shutdown(): Promise<void>;
}

export interface ProcessShutdownDeps {
  log: Logger;
  exit(code: number): void;
}

export class ProcessShutdown {
  private readonly abort = new AbortController();
  private startup: Promise<Stoppable | null> = Promise.resolve(null);
  private readonly closers: Array<() => Promise<void>> = [];
  private running: Promise<void> | null = null;

  constructor(private readonly deps: ProcessShutdownDeps) {}

  /** Aborted when shutdown begins: start-up stops where it is (startGateway's `stopping`). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * Start-up under way: shutdown waits for it to settle (aborted by `signal`, it settles at once; null
   * when it stopped what it had started itself), then shuts down what it returned.
   */
  starting(startup: Promise<Stoppable | null>): void {
    this.startup = startup.catch(() => null);
  }

  /** Closed once the gateway has shut down, in the order given (the Pub/Sub client). */
  onClose(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  request(reason: string, code = 0): Promise<void> {
    if (this.running) {
      this.deps.log.info('already shutting down', { reason });
      return this.running;
    }
    this.running = this.run(reason, code);
    return this.running;
  }

  private async run(reason: string, code: number): Promise<void> {
    this.deps.log.info('shutting down', { reason });
    this.abort.abort();
    let exitCode = code;
    try {
      await (await this.startup)?.shutdown();
      for (const close of this.closers) await close();
    } catch (err) {
      this.deps.log.error('shutdown failed', { error: err instanceof Error ? err.message : String(err) });
      exitCode ||= 1;
    }
    this.deps.log.info('stopped');
    this.deps.exit(exitCode);
  }
}
