// Our own bounded retry with full jitter for 5xx / 429 / unanswered calls: gax compares REST status
// codes with gRPC codes and so retries none of them (gax-nodejs#1803, recipes §3). Our own deadline per
// attempt too: over REST (the only transport @google-cloud/compute has) gax drops the call's deadline —
// `timeout` in the call options and the method's 600 s default alike — so a stalled connection to
// compute.googleapis.com would otherwise hold a reconcile or GC invocation until the function's timeout.
import { withDeadline } from '../deadline.js';
import { computeErrorInfo, isRetryable } from './errors.js';

export interface RetryOptions {
  /** Total tries, the first included. */
  attempts: number;
  baseMs: number;
  maxMs: number;
  /** How long one attempt may go unanswered before it counts as unanswered (retryable); 0 = no limit. */
  attemptTimeoutMs?: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export const defaultRetry: RetryOptions = {
  attempts: 4,
  baseMs: 200,
  maxMs: 2_000,
  attemptTimeoutMs: 30_000,
};

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What an attempt past its deadline rejects with: no HTTP status, so it classifies as unanswered. */
export class AttemptTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'AttemptTimeoutError';
  }
}

/**
 * `call()` or AttemptTimeoutError after `ms`. The request itself cannot be cancelled through the REST
 * client (its promise has no cancel), so a late answer is dropped; every call the provider makes is safe
 * to repeat (deterministic names: 409 on insert is a success, and a delete answered 404 or resourceNotReady is asked again or
 * found done).
 */
function attemptWithin<T>(call: () => Promise<T>, ms: number | undefined): Promise<T> {
  if (!ms || ms <= 0) return call();
  return withDeadline(call(), ms, () => new AttemptTimeoutError(ms));
}

export async function withRetry<T>(call: () => Promise<T>, opts: RetryOptions = defaultRetry): Promise<T> {
  const sleep = opts.sleep ?? realSleep;
  const random = opts.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await attemptWithin(call, opts.attemptTimeoutMs);
    } catch (err) {
      if (attempt >= opts.attempts || !isRetryable(computeErrorInfo(err))) throw err;
      const cap = Math.min(opts.maxMs, opts.baseMs * 2 ** (attempt - 1));
      await sleep(Math.floor(random() * cap));
    }
  }
}
