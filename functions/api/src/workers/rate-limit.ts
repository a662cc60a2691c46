// Per-worker request rates (contract §8: limits on every endpoint): the token buckets of
// middleware/token-bucket.ts, keyed by endpoint and worker id (routes.ts).
import type { RateSpec } from '../middleware/token-bucket.js';

export { type RateDecision, RateLimiter, type RateSpec } from '../middleware/token-bucket.js';

export const WORKER_RATES = {
  register: { perSecond: 1, burst: 5 },
  ack: { perSecond: 10, burst: 20 },
  runtime: { perSecond: 5, burst: 20 },
  outcomes: { perSecond: 10, burst: 40 },
  snapshot: { perSecond: 1, burst: 5 },
} as const satisfies Record<string, RateSpec>;
