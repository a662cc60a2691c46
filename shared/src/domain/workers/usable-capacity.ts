// Fail closed (contract §2, brief invariant 5): the controller uses a worker's reported counts only while
// the session, the report's TTL, the proxy's ownership and the ownership epoch are all valid at once.
// Anything missing, expired or inconsistent means zero usable capacity — unknown is never idle.
import type { ProxyCounts } from './runtime-report.js';

export interface StoredReport {
  workerId: string;
  sessionId: string;
  epoch: number;
  receivedAt: Date;
  draining: boolean;
  counts: ProxyCounts[];
}

export interface OwnershipView {
  owner: string | null;
  epoch: number;
  expiresAt: Date | null;
}

export interface CapacityInputs {
  capacity: number;
  ownership: OwnershipView;
  /** The owner's live session id, or null when it has none. */
  ownerSessionId: string | null;
  report: StoredReport | null;
  currentEpoch: number;
  reportTtlMs: number;
  now: Date;
}

/** Each report's counts by proxy, built once per counts list (a stored report is never changed). */
const countIndexes = new WeakMap<readonly ProxyCounts[], ReadonlyMap<string, ProxyCounts>>();

/**
 * The count a report gives `proxy` (the first, as a scan would find it), or undefined. Indexed once per
 * report: callers ask for every proxy a worker owns, and a scan per proxy was pool × counts.
 */
export function reportedCount(counts: readonly ProxyCounts[], proxy: string): ProxyCounts | undefined {
  let index = countIndexes.get(counts);
  if (!index) {
    const built = new Map<string, ProxyCounts>();
    for (const c of counts) if (!built.has(c.proxy)) built.set(c.proxy, c);
    countIndexes.set(counts, built);
    index = built;
  }
  return index.get(proxy);
}

export type CountsView = { valid: true; active: number; reserved: number } | { valid: false; reason: string };

export function countsFor(proxy: string, x: CapacityInputs): CountsView {
  const { ownership, report, now } = x;
  if (!ownership.owner) return { valid: false, reason: 'no_owner' };
  if (!ownership.expiresAt || ownership.expiresAt.getTime() <= now.getTime()) {
    return { valid: false, reason: 'ownership_expired' };
  }
  if (!x.ownerSessionId) return { valid: false, reason: 'no_session' };
  if (!report) return { valid: false, reason: 'no_report' };
  if (report.workerId !== ownership.owner || report.sessionId !== x.ownerSessionId) {
    return { valid: false, reason: 'report_from_other_session' };
  }
  if (now.getTime() - report.receivedAt.getTime() > x.reportTtlMs)
    return { valid: false, reason: 'report_expired' };
  if (report.epoch !== x.currentEpoch || ownership.epoch > report.epoch)
    return { valid: false, reason: 'epoch_mismatch' };
  const c = reportedCount(report.counts, proxy);
  return { valid: true, active: c?.active ?? 0, reserved: c?.reserved ?? 0 };
}

export function usableCapacity(proxy: string, x: CapacityInputs): number {
  const v = countsFor(proxy, x);
  return v.valid ? Math.max(0, x.capacity - v.active - v.reserved) : 0;
}
