// A scheduled job's tick that fails says so on one structured line. Thrown out of a Cloud Functions
// handler, an error reaches the log only as the functions framework's text stack (no `severity`, no
// `event`), which no log-based metric, alert or Logs Explorer query on jsonPayload can find. Every tick
// failure of probe, gc, requeue and snapshot is this one ERROR line instead, `event` `job.tick_failed`
// with the `job` and the error's message (never its stack or the objects it carries: no secrets).
import type { Logger } from './json-logger.js';

export const TickFailedEvent = 'job.tick_failed';

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Logs a failed tick of `job` (the Scheduler job's name: probe-tick, gc-sweep, …) at ERROR. */
export function logTickFailure(
  log: Pick<Logger, 'error'>,
  job: string,
  err: unknown,
  fields: Record<string, unknown> = {},
): void {
  log.error('scheduled tick failed', { ...fields, event: 'job.tick_failed', job, error: messageOf(err) });
}

/**
 * Runs one tick of `job`; when it throws, logs the failure (logTickFailure) and throws the same error on,
 * so the function still answers 500 and Pub/Sub redelivers as before (a redelivered tick finds its run
 * claimed, or runs it again: every tick is idempotent).
 */
export async function loggedTick<T>(
  log: Pick<Logger, 'error'>,
  job: string,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    logTickFailure(log, job, err);
    throw err;
  }
}
