// proxyplane_rate_limited_total{class}: the requests the per-caller rate limit refused (caller-rate-limit.ts),
// by route class — five values, never the caller (an unbounded label, and a name an operator finds in the
// request log instead). Every class starts at 0, so that a rate() over it exists before the first refusal.
import { Counter, type Registry } from 'prom-client';
import { CALLER_CLASSES, type CallerClass } from './caller-rate-limit.js';

export function promRateLimitRefusals(registry: Registry): (cls: CallerClass) => void {
  const refused = new Counter({
    name: 'proxyplane_rate_limited_total',
    help: 'Crawler and admin requests refused 429 rate_limited by the per-caller limit, by route class.',
    labelNames: ['class'] as const,
    registers: [registry],
  });
  for (const cls of CALLER_CLASSES) refused.inc({ class: cls }, 0);
  return (cls) => refused.inc({ class: cls });
}
