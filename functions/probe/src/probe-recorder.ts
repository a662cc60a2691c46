// Seed §9's fed vectors — healthcheck_duration_seconds and healthcheck_failures_total observe EVERY
// probe, while status writes are transition-only. The probe declares the small recorder it needs; only
// its entry point picks the implementation. A Pub/Sub-triggered function has no /metrics anyone could
// scrape, so the deployed recorder writes one `probe.result` line per tier per probe, and Terraform's
// log-based metrics turn them into proxyplane/probe_results {tier, ok} (the failures counter:
// ok="false") and proxyplane/probe_latency {tier} (a distribution). Per proxy, the lines are the
// series (Logs Explorer, jsonPayload.proxy): a per-proxy label on a Cloud Monitoring metric would cost
// a time series per proxy and tier. A pruned proxy simply stops producing lines. The event is written
// as a literal: test/terraform/code-contract.test.ts reads each counted event's level from its call.
import type { TierOutcome } from './tiers.js';

export type TierObservation = TierOutcome['observations'][number];

export interface ProbeRecorder {
  observe(proxy: string, o: TierObservation): void;
}

export const PROBE_RESULT_EVENT = 'probe.result';

export function logProbeRecorder(log: {
  info(message: string, fields?: Record<string, unknown>): void;
}): ProbeRecorder {
  return {
    observe: (proxy, o) =>
      log.info('probe', {
        event: 'probe.result',
        proxy,
        tier: o.tier,
        ok: o.ok,
        latencyMs: o.latencyMs,
        code: o.code,
        // TARGET lines name their route (per route: Logs Explorer, jsonPayload.route; not a metric label).
        ...(o.route !== undefined ? { route: o.route } : {}),
      }),
  };
}
