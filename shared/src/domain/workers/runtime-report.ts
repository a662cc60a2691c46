// ReportRuntime (contract §2): strictly monotonic report_sequence within a session; the same sequence only
// as an identical replay; a report must sit exactly on the session's ACK bound (a worker claiming a newer
// snapshot or epoch than it acknowledged is rejected), except the last report of a worker shutting down
// idle before it ever ACKed (version 0); it is a complete sparse replacement of the counts. A lapsed session
// (still the worker's current one) takes only the last word of a worker shutting down idle.
import { shutDownIdle } from './drain.js';
import { hash53 } from './rendezvous.js';
import { isLive, type WorkerSession } from './session.js';

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
  | 'invalid_counts'
  | 'session_expired';

export type ReportDecision =
  | { ok: true; replay: boolean; session: WorkerSession }
  | { ok: false; error: ReportRejection };

/**
 * A fixed-size digest of a report's content (everything but the session id), for replay comparison: two
 * independent 53-bit hashes of the canonical text, so the session document stays small whatever the report
 * size. A collision could only make a conflicting report look like a replay, which changes nothing.
 */
export function reportDigest(r: RuntimeReport): string {
  const counts = [...r.counts]
    .sort((a, b) => (a.proxy < b.proxy ? -1 : a.proxy > b.proxy ? 1 : 0))
    .map((c) => `${c.proxy}=${c.active}/${c.reserved}`)
    .join(',');
  const text = `${r.reportSequence}|${r.snapshotVersion}|${r.epoch}|${r.draining ? 1 : 0}|${counts}`;
  return `${hash53(text, 1).toString(16)}-${hash53(text, 2).toString(16)}-${text.length}`;
}

export function acceptRuntimeReport(
  session: WorkerSession,
  report: RuntimeReport,
  currentEpoch: number,
  now: Date,
  sessionTtlMs: number,
): ReportDecision {
  // A busy worker shutting down reports at the epoch it last ACKed, so once its drains start (the epoch
  // rises) each report is refused stale_epoch and none extends its session: a drain that outlasts the
  // session TTL ends with the session lapsed. Its last word (drain.ts shutDownIdle) is what hands its
  // proxies over — refused, they would serve no one until its grant lapsed (minutes). So a lapsed session
  // takes that kind of report and no other, under every rule below; it is stored, the session not revived.
  const live = isLive(session, now);
  if (!live && !shutDownIdle(report)) return { ok: false, error: 'session_expired' };
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
  if (session.ackedVersion === null || session.ackedEpoch === null) {
    // Before any ACK the one report accepted is a worker's last: shutting down with nothing in flight,
    // naming no snapshot (version 0) at an epoch it was told of (registration's ownershipEpoch). A worker
    // stopped during its start wait (no snapshot yet) hands its proxies over with it at once instead of
    // after their grant lapses (drain.ts shutDownIdle).
    const lastWord = report.snapshotVersion === 0 && report.epoch <= currentEpoch && shutDownIdle(report);
    if (!lastWord) return { ok: false, error: 'no_ack' };
  } else {
    if (report.snapshotVersion !== session.ackedVersion || report.epoch !== session.ackedEpoch) {
      return { ok: false, error: 'ack_bound_mismatch' };
    }
    // A worker shutting down with nothing in flight may report from an older epoch: it no longer pulls
    // snapshots, and this report is what completes its drains (drain.ts shutDownIdle).
    if (report.epoch < currentEpoch && !shutDownIdle(report)) return { ok: false, error: 'stale_epoch' };
  }
  return {
    ok: true,
    replay: false,
    session: {
      ...session,
      lastReportSequence: report.reportSequence,
      lastReportDigest: digest,
      validUntil: live ? new Date(now.getTime() + sessionTtlMs) : session.validUntil,
    },
  };
}
