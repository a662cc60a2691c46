// When a proxy counts as drained by its owner (contract §4 steps 2–3): the owner's live session has a
// report that is still within its TTL (controller clock), was made at an epoch ≥ the one at which the
// proxy left its snapshot, and shows zero active and reserved for the proxy (a report is a complete
// sparse replacement, so absence means zero). Anything missing or stale means "not drained yet".
// One exception to the epoch rule: a worker shutting down (`draining: true`, which it never takes back)
// with nothing in flight at all has drained everything it owns, whatever snapshot it last ACKed — it will
// not start another request. It stops pulling snapshots when it shuts down, so waiting for a report at
// the drain's epoch would hold its proxies unowned until its grant lapsed (minutes, on every scale-in).
import { isLive, type WorkerSession } from './session.js';
import { reportedCount, type StoredReport } from './usable-capacity.js';

export interface DrainInputs {
  session: WorkerSession | null;
  report: StoredReport | null;
  now: Date;
  reportTtlMs: number;
}

export function drainedAt(proxy: string, sinceEpoch: number, x: DrainInputs): boolean {
  const { session, report, now } = x;
  if (!session || !report || !isLive(session, now)) return false;
  if (report.sessionId !== session.sessionId || report.workerId !== session.workerId) return false;
  if (now.getTime() - report.receivedAt.getTime() > x.reportTtlMs) return false;
  if (report.epoch < sinceEpoch && !shutDownIdle(report)) return false;
  const c = reportedCount(report.counts, proxy);
  return !c || (c.active === 0 && c.reserved === 0);
}

/** A shutting-down worker's report with every count zero: nothing it owns is in use, or will be again. */
export const shutDownIdle = (report: Pick<StoredReport, 'draining' | 'counts'>): boolean =>
  report.draining && report.counts.every((c) => c.active === 0 && c.reserved === 0);
