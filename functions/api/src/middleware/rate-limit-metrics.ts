// proxyplane_rate_limited_total{class}: the requests the API's own limits refused 429 rate_limited — the
// per-caller limit (caller-rate-limit.ts) by route class, and the per-address limit on failed
// authentication (auth-failure-limit.ts) as `auth-failure` — six values, never the caller or the address
// (unbounded labels; the request log names the principal, the limit's WARNING an address). Every class
// starts at 0, so that a rate() over it exists before the first refusal.
import { Counter, type Registry } from 'prom-client';
import { AUTH_FAILURE_CLASS } from './auth-failure-limit.js';
import { CALLER_CLASSES, type CallerClass } from './caller-rate-limit.js';

export const RATE_LIMIT_CLASSES = [...CALLER_CLASSES, AUTH_FAILURE_CLASS] as const;
export type RateLimitClass = CallerClass | typeof AUTH_FAILURE_CLASS;

export function promRateLimitRefusals(registry: Registry): (cls: RateLimitClass) => void {
  const refused = new Counter({
    name: 'proxyplane_rate_limited_total',
    help: 'Requests refused 429 rate_limited by the per-caller limit (by route class) or the per-address limit on failed authentication (auth-failure).',
    labelNames: ['class'] as const,
    registers: [registry],
  });
  for (const cls of RATE_LIMIT_CLASSES) refused.inc({ class: cls }, 0);
  return (cls) => refused.inc({ class: cls });
}
