// The seed's latency-report rule (§6): report a new latency only when it moved by more than
// max(20 ms, 50 % of the last reported value), and at most once per MinReportInterval, so a slow proxy is
// reported once rather than on every tick.

export const MinLatencyDeltaMs = 20;
export const MinReportIntervalMs = 60_000;

export interface LatencyReport {
  reportedMs: number | null;
  reportedAt: Date | null;
}

export function shouldReportLatency(last: LatencyReport, observedMs: number, now: Date): boolean {
  if (last.reportedMs === null || last.reportedAt === null) return true;
  if (now.getTime() - last.reportedAt.getTime() < MinReportIntervalMs) return false;
  return Math.abs(observedMs - last.reportedMs) > Math.max(MinLatencyDeltaMs, 0.5 * last.reportedMs);
}
