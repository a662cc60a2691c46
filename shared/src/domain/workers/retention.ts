// Which gateway workers are past retention: everything stored for them (worker document, snapshot header
// and parts, outcome batches) may be deleted. Cloud Run registers a new worker id per instance, so without
// this the stored workers grow by one per instance ever started.
//
// A worker is past retention only when all of these hold (each is what keeps a live one safe):
//   - no ownership record names it: the planner releases a lapsed owner's records on its next pass
//     (ownership.ts: grantLapsed), so one still named is left until the planner has let go;
//   - its session ended before the cutoff (now − retention; retention ≥ the view horizon, so no worker
//     the snapshot pass or the admin view still reads is touched);
//   - its snapshot header, if any, grants nothing after the cutoff and its snapshot expired before it.
// The header itself goes only once the global ownership epoch has moved past the header's: a gateway
// refuses a lower version of the same epoch (domain/gateway/acceptance.ts), and a worker id that comes
// back (a pinned GATEWAY_WORKER_ID, or a process cut off for longer than the retention) starts again at
// version 1 without its header. Every snapshot built after the epoch moved carries a higher epoch than any
// the old header could have sent, and the gateway takes a higher epoch whatever the version. Until then
// the header stays (a few hundred bytes); the worker document goes regardless.

export interface RetentionFacts {
  /** The worker document's session end, or null when there is no worker document. */
  sessionValidUntil: Date | null;
  /** The snapshot header, or null when there is none. */
  header: { grantedUntil: Date | null; validUntil: Date; ownershipEpoch: number } | null;
  /** Whether some ownership record names the worker as its owner. */
  owns: boolean;
}

export type KeepReason =
  | 'owns_proxies'
  | 'session_recent'
  | 'grant_recent'
  | 'snapshot_recent'
  /** Only a header is left, and the epoch has not moved past it yet. */
  | 'epoch_unchanged'
  /** Nothing is stored for the worker (already deleted). */
  | 'nothing_stored';

export type RetentionDecision =
  | { kind: 'keep'; reason: KeepReason }
  /** `header`: whether the header (and its parts) go too; false while the epoch has not moved past it. */
  | { kind: 'delete'; header: boolean };

/** Sessions and snapshots that ended before this instant are past retention. */
export const retentionCutoff = (now: Date, retentionMs: number): Date =>
  new Date(now.getTime() - retentionMs);

export function decideRetention(f: RetentionFacts, cutoff: Date, epoch: number): RetentionDecision {
  const before = (d: Date) => d.getTime() < cutoff.getTime();
  if (f.sessionValidUntil === null && f.header === null) return { kind: 'keep', reason: 'nothing_stored' };
  if (f.owns) return { kind: 'keep', reason: 'owns_proxies' };
  if (f.sessionValidUntil && !before(f.sessionValidUntil)) return { kind: 'keep', reason: 'session_recent' };
  const h = f.header;
  if (h?.grantedUntil && !before(h.grantedUntil)) return { kind: 'keep', reason: 'grant_recent' };
  if (h && !before(h.validUntil)) return { kind: 'keep', reason: 'snapshot_recent' };
  const header = h !== null && h.ownershipEpoch < epoch;
  if (!header && f.sessionValidUntil === null) return { kind: 'keep', reason: 'epoch_unchanged' };
  return { kind: 'delete', header };
}
