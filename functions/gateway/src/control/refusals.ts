// How the session answers a refused or failed call to the controller (docs/gateway.md § Controller
// session, Backoff and Logs): how long to wait before the next try, and how loudly to say so.
import type { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';
import type { ControlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import type { Logger } from '../logger.js';
import type { ControlAnswer } from './client.js';
import type { SessionSettings } from './session-settings.js';

export type Refusal = Extract<ControlAnswer<unknown>, { ok: false }>;

export const REFUSAL_LOG_QUIET_MS = 30_000;

/**
 * The wait after a refusal: 429 waits its Retry-After (never less than the first backoff step, never
 * more than the slow retry), 403 a jittered slow retry, anything else the call's next backoff step.
 */
export function retryDelay(
  reaction: ControlReaction,
  answer: { retryAfterMs?: number },
  settings: Pick<SessionSettings, 'backoff' | 'slowRetryMs'>,
  random: () => number,
  backoff: Backoff,
): number {
  if (reaction === 'rate_limited' && answer.retryAfterMs !== undefined)
    return boundedRetryAfter(answer.retryAfterMs, settings);
  if (reaction === 'retry_slowly') return slowRetryDelay(settings, random);
  return backoff.next();
}

/** The jittered slow retry after a 403 (configuration: contract §7), half to all of `slowRetryMs`. */
export const slowRetryDelay = (settings: Pick<SessionSettings, 'slowRetryMs'>, random: () => number) =>
  Math.round(settings.slowRetryMs * (0.5 + random() / 2));

/**
 * A Retry-After, bounded: whatever a controller or a front end in its place says, the worker waits no
 * longer than its slowest retry (contract §7: bounded backoff) — and a delay of 2^31 ms or more would
 * fire after 1 ms (setTimeout's 32-bit delay), a tight loop.
 */
export function boundedRetryAfter(
  retryAfterMs: number,
  settings: Pick<SessionSettings, 'backoff' | 'slowRetryMs'>,
): number {
  return Math.min(Math.max(retryAfterMs, settings.backoff.initialMs), settings.slowRetryMs);
}

/**
 * One line per kind of refusal, then at most one per `quietMs` while it repeats (with how many were
 * left out): a control plane that is down for minutes must not flood the log.
 */
export class RefusalLog {
  private readonly seen = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly log: Logger,
    private readonly workerId: string,
    private readonly now: () => number,
    private readonly quietMs = REFUSAL_LOG_QUIET_MS,
  ) {}

  record(call: string, answer: Refusal, reaction: ControlReaction, retryInMs: number | null): void {
    const key = `${call}|${answer.status}|${answer.code ?? ''}`;
    const now = this.now();
    const seen = this.seen.get(key);
    if (seen && now - seen.at < this.quietMs) {
      seen.suppressed++;
      return;
    }
    this.seen.set(key, { at: now, suppressed: 0 });
    const quiet = ['await_snapshot', 'no_snapshot', 'rate_limited', 'ack_first'].includes(reaction);
    const loud = reaction === 'retry_slowly' || reaction === 'drop' || reaction === 'fatal';
    const level = loud ? 'error' : quiet ? 'info' : 'warn';
    this.log[level](`control plane refused ${call}`, {
      workerId: this.workerId,
      status: answer.status,
      code: answer.code,
      reaction,
      retryInMs: retryInMs ?? undefined,
      detail: answer.message,
      suppressedSinceLast: seen?.suppressed,
    });
  }
}
