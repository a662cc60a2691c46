// When a proxy counts as drained by its owner (contract §4 steps 2–3): the owner's live session has a
// report that is still within its TTL (controller clock), was made at an epoch ≥ the one at which the
// proxy left its snapshot, and shows zero active and reserved for the proxy (a report is a complete
// sparse replacement, so absence means zero — unless it was cut at its limit with only draining proxies in
// it: reportCut). Anything missing or stale means "not drained yet".
// One exception: a worker shutting down (`draining: true`, which it never takes back) with nothing in
// flight at all has drained everything it owns, whatever snapshot it last ACKed — it will not start
// another request. It stops pulling snapshots when it shuts down, so waiting for a report at the drain's
// epoch would hold its proxies unowned until its grant lapsed (minutes, on every scale-in). That report is
// its session's last word, not a reading that ages: it sends it and exits, so no fresher report comes,
// and its session lapses a TTL later. It counts for as long as that session is the worker's current one —
// past the report's TTL and the session's end — else a pass that ran only after the report's TTL (a busy
// planner, a failed pass) would start a drain no report ever ends, the proxies serving no one until the
// grant lapsed. A new session of the worker (another process) supersedes it: its report no longer counts.
import { isLive, type WorkerSession } from './session.js';
import { reportedCount, type StoredReport } from './usable-capacity.js';

export interface DrainInputs {
  session: WorkerSession | null;
  report: StoredReport | null;
  now: Date;
  reportTtlMs: number;
  /** The report was cut at its limit with only draining proxies in it (snapshots/plan-pass.ts): one absent
   *  from it may be busy, and is not drained yet. */
  reportCut?: boolean;
}

export function drainedAt(proxy: string, sinceEpoch: number, x: DrainInputs): boolean {
  const { session, report, now } = x;
  if (!session || !report) return false;
  if (report.sessionId !== session.sessionId || report.workerId !== session.workerId) return false;
  if (shutDownIdle(report)) return true;
  if (!isLive(session, now)) return false;
  if (now.getTime() - report.receivedAt.getTime() > x.reportTtlMs) return false;
  if (report.epoch < sinceEpoch) return false;
  const c = reportedCount(report.counts, proxy);
  if (!c) return !x.reportCut;
  return c.active === 0 && c.reserved === 0;
}

/** A shutting-down worker's report with every count zero: nothing it owns is in use, or will be again. */
export const shutDownIdle = (report: Pick<StoredReport, 'draining' | 'counts'>): boolean =>
  report.draining && report.counts.every((c) => c.active === 0 && c.reserved === 0);
