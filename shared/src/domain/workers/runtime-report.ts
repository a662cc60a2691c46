// ReportRuntime (contract §2): strictly monotonic report_sequence within a session; the same sequence only
// as an identical replay; a report must sit exactly on the session's ACK bound (a worker claiming a newer
// snapshot or epoch than it acknowledged is rejected); it is a complete sparse replacement of the counts.
import type { WorkerSession } from './session.js';

export interface ProxyCounts {
  proxy: string;
  active: number;
  reserved: number;
}

export interface RuntimeReport {
  sessionId: string;
  reportSequence: number;
  snapshotVersion: number;
  epoch: number;
  draining: boolean;
  /** Only proxies with non-zero counts; an empty list means every count is zero. */
  counts: ProxyCounts[];
}

export type ReportRejection =
  | 'sequence_regression'
  | 'sequence_conflict'
  | 'ack_bound_mismatch'
  | 'no_ack'
  | 'stale_epoch'
  | 'invalid_counts';

export type ReportDecision =
  | { ok: true; replay: boolean; session: WorkerSession }
  | { ok: false; error: ReportRejection };

/** Canonical content of a report (everything but the session id), for replay comparison. */
export function reportDigest(r: RuntimeReport): string {
  const counts = [...r.counts]
    .sort((a, b) => (a.proxy < b.proxy ? -1 : a.proxy > b.proxy ? 1 : 0))
    .map((c) => `${c.proxy}=${c.active}/${c.reserved}`)
    .join(',');
  return `${r.reportSequence}|${r.snapshotVersion}|${r.epoch}|${r.draining ? 1 : 0}|${counts}`;
}

export function acceptRuntimeReport(
  session: WorkerSession,
  report: RuntimeReport,
  currentEpoch: number,
  now: Date,
  sessionTtlMs: number,
): ReportDecision {
  const seen = new Set<string>();
  for (const c of report.counts) {
    if (seen.has(c.proxy) || c.active < 0 || c.reserved < 0) return { ok: false, error: 'invalid_counts' };
    seen.add(c.proxy);
  }
  const digest = reportDigest(report);
  const last = session.lastReportSequence;
  if (last !== null && report.reportSequence < last) return { ok: false, error: 'sequence_regression' };
  if (last !== null && report.reportSequence === last) {
    return digest === session.lastReportDigest
      ? { ok: true, replay: true, session }
      : { ok: false, error: 'sequence_conflict' };
  }
  if (session.ackedVersion === null || session.ackedEpoch === null) return { ok: false, error: 'no_ack' };
  if (report.snapshotVersion !== session.ackedVersion || report.epoch !== session.ackedEpoch) {
    return { ok: false, error: 'ack_bound_mismatch' };
  }
  if (report.epoch < currentEpoch) return { ok: false, error: 'stale_epoch' };
  return {
    ok: true,
    replay: false,
    session: {
      ...session,
      lastReportSequence: report.reportSequence,
      lastReportDigest: digest,
      validUntil: new Date(now.getTime() + sessionTtlMs),
    },
  };
}
