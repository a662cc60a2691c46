// One shutdown per process, whatever start-up has reached when it is asked for (SIGTERM/SIGINT, or a
// session error no retry can fix): before registration, while the register call is in flight, during the
// start wait, or once listening (docs/gateway.md § Shutdown). main.ts installs the signal handlers before
// start-up begins and hands this its pieces as they come; a second request while one runs is only logged.
import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import type { Logger } from './logger.js';

export interface Stoppable {
  shutdown(): Promise<void>;
}

export interface ProcessShutdownDeps {
  log: Logger;
  exit(code: number): void;
  /** How long the closers get, together (default CLOSE_BOUND_MS). */
  closeTimeoutMs?: number;
}

/**
 * The closers' bound. They run after the drain (6.5 s), the final report (2 s) and the pull's close (1 s):
 * what is left of Cloud Run's 10 s grace. A client that does not close in it is left to the exit.
 */
export const CLOSE_BOUND_MS = 500;

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
      await this.close();
    } catch (err) {
      this.deps.log.error('shutdown failed', { error: err instanceof Error ? err.message : String(err) });
      exitCode ||= 1;
    }
    this.deps.log.info('stopped');
    this.deps.exit(exitCode);
  }

  /** The closers in order, bounded together: the process exits after them whether or not they finish. */
  private async close(): Promise<void> {
    const ms = this.deps.closeTimeoutMs ?? CLOSE_BOUND_MS;
    const closing = (async () => {
      for (const close of this.closers) await close();
    })();
    try {
      await withDeadline(closing, ms, () => new CloseTimeout());
    } catch (err) {
      if (!(err instanceof CloseTimeout)) throw err;
      this.deps.log.warn('clients not closed in time: exiting without them', { timeoutMs: ms });
    }
  }
}

/** The closers' bound passed (withDeadline's error): not a failure of the shutdown, which is done. */
class CloseTimeout extends Error {}
