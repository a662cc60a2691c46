// The `gateway.traffic` line: every GATEWAY_TRAFFIC_LOG_SECONDS, what this worker served since the line
// before (shared/src/domain/gateway/traffic.ts). Nothing scrapes the gateway's /metrics in production, so
// this line is how its traffic health reaches Cloud Monitoring: terraform/monitoring.tf's gateway_traffic
// metrics read its fields, and the no-upstream, outcome-drop and suspect-fallback alerts divide them by
// `requests` (docs/operations.md). Logged on every period, zeros included: an idle worker's line says
// "nothing happened" where no line would leave the charts and the ratios without a point to read.
import {
  type RequestCount,
  type TrafficTotals,
  tallyTraffic,
  trafficDelta,
} from '../../../shared/src/domain/gateway/traffic.js';
import type { Logger } from './logger.js';

/** Where the counts already live: read when the line is due, never per request. */
export interface TrafficCounters {
  /** Cumulative requests by route and outcome code (the recorder's gateway_requests_total). */
  requestCounts(): Iterable<RequestCount>;
  /** Cumulative samples the outcome queue dropped. */
  outcomeQueueDrops(): number;
  /** Cumulative picks that fell back to a SUSPECT upstream. */
  suspectFallbacks(): number;
  /** Requests past the upstream handshake now (a gauge). */
  activeTunnels(): number;
}

export interface TrafficLogOptions {
  workerId: string;
  periodMs: number;
  /** Monotonic milliseconds, for the line's periodSeconds. */
  monotonicNow: () => number;
}

/**
 * Starts the periodic line. The returned function stops it and logs a last line of what came since the line
 * before: a worker shut down between two lines (a scale-in, a rollout, a process living less than a period)
 * would otherwise take up to a period of its traffic, or all of it, away from the alerts. Call it once the
 * drain is over, so that the requests the drain finished or refused are in that line too.
 */
export function startTrafficLog(log: Logger, counters: TrafficCounters, opts: TrafficLogOptions): () => void {
  const read = (): TrafficTotals =>
    tallyTraffic(counters.requestCounts(), counters.outcomeQueueDrops(), counters.suspectFallbacks());
  let prev = read();
  let prevAt = opts.monotonicNow();
  const emit = () => {
    const now = read();
    const at = opts.monotonicNow();
    const d = trafficDelta(prev, now);
    log.info('gateway traffic', {
      event: 'gateway.traffic',
      workerId: opts.workerId,
      periodSeconds: Math.round((at - prevAt) / 100) / 10,
      requests: d.requests,
      outcomes: d.outcomes,
      noUpstreamRoutes: d.noUpstreamRoutes,
      outcomeQueueDrops: d.outcomeQueueDrops,
      suspectFallbacks: d.suspectFallbacks,
      activeTunnels: counters.activeTunnels(),
    });
    prev = now;
    prevAt = at;
  };
  const timer = setInterval(emit, opts.periodMs);
  timer.unref();
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    emit();
  };
}
