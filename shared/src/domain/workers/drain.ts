// When a proxy counts as drained by its owner (contract §4 steps 2–3): the owner's live session has a
// report that is still within its TTL (controller clock), was made at an epoch ≥ the one at which the
// proxy left its snapshot, and shows zero active and reserved for the proxy (a report is a complete
// sparse replacement, so absence means zero). Anything missing or stale means "not drained yet".
import { isLive, type WorkerSession } from './session.js';
import type { StoredReport } from './usable-capacity.js';

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
  if (report.epoch < sinceEpoch) return false;
  const c = report.counts.find((r) => r.proxy === proxy);
  return !c || (c.active === 0 && c.reserved === 0);
}
