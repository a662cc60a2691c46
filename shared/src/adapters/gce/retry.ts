// Our own bounded retry with full jitter for 5xx / 429 / unanswered calls: gax compares REST status
// codes with gRPC codes and so retries none of them (gax-nodejs#1803, recipes §3).
import { computeErrorInfo, isRetryable } from './errors.js';

export interface RetryOptions {
  /** Total tries, the first included. */
  attempts: number;
  baseMs: number;
  maxMs: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export const defaultRetry: RetryOptions = { attempts: 4, baseMs: 200, maxMs: 2_000 };

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function withRetry<T>(call: () => Promise<T>, opts: RetryOptions = defaultRetry): Promise<T> {
  const sleep = opts.sleep ?? realSleep;
  const random = opts.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= opts.attempts || !isRetryable(computeErrorInfo(err))) throw err;
      const cap = Math.min(opts.maxMs, opts.baseMs * 2 ** (attempt - 1));
      await sleep(Math.floor(random() * cap));
    }
  }
}
