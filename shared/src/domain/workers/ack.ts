// AcknowledgeSnapshot (contract §2): the worker tells which snapshot it swapped in. The controller records
// it as the session's ACK bound only if it is the snapshot the controller actually sent (same version,
// epoch and checksum as the latest one built for this worker) and not older than the current bound.
import type { WorkerSession } from './session.js';

export interface AckRequest {
  version: number;
  epoch: number;
  checksum: string;
}

export interface BuiltSnapshotRef {
  version: number;
  epoch: number;
  checksum: string;
}

export type AckDecision =
  | { ok: true; session: WorkerSession; unchanged: boolean }
  | { ok: false; error: 'unknown_snapshot' | 'checksum_mismatch' | 'stale_epoch' | 'version_regression' };

/** `sent` holds the snapshots recently published to this worker, so that an ACK in flight still matches. */
export function acceptAck(
  session: WorkerSession,
  ack: AckRequest,
  sent: BuiltSnapshotRef[],
  currentEpoch: number,
): AckDecision {
  // A replay of the ACK this session's bound already is — its answer lost on the way (a timeout, a reset),
  // the worker asks again — gets the answer it first got, whatever came since: the epoch may have risen
  // (any drain raises it) or the snapshot left the recent list. Refused, the worker gave the snapshot up
  // and could name no bound it knew to be accepted: its runtime reports, the last one at shutdown among
  // them, were refused ack_bound_mismatch until its grant lapsed, its proxies idle meanwhile. Nothing is
  // recorded that was not already, so nothing older than the current epoch is taken in.
  if (
    session.ackedVersion === ack.version &&
    session.ackedEpoch === ack.epoch &&
    session.ackedChecksum === ack.checksum
  )
    return { ok: true, unchanged: true, session };
  const match = sent.find((s) => s.version === ack.version);
  if (!match) return { ok: false, error: 'unknown_snapshot' };
  if (match.checksum !== ack.checksum || match.epoch !== ack.epoch)
    return { ok: false, error: 'checksum_mismatch' };
  // Contract §2: data whose ownership epoch is below the controller's current one is rejected; the worker
  // is about to receive the snapshot of the new epoch and will acknowledge that one.
  if (ack.epoch < currentEpoch) return { ok: false, error: 'stale_epoch' };
  if (session.ackedVersion !== null && ack.version < session.ackedVersion) {
    return { ok: false, error: 'version_regression' };
  }
  return {
    ok: true,
    unchanged: false,
    session: { ...session, ackedVersion: ack.version, ackedEpoch: ack.epoch, ackedChecksum: ack.checksum },
  };
}

/**
 * Whether an accepted ACK is the session's first: its bound was unset before and is set now. The planner
 * gives a session proxies only from then on (snapshots/plan-pass.ts assignable), so the API asks for a
 * pass at that moment rather than leave the new worker waiting for the next tick; a replay of the same
 * ACK, or any later one, finds the bound already set and is no first ACK (the API asks again on a replay
 * for its own reason: functions/api/src/workers/session-service.ts).
 */
export const isFirstAck = (before: WorkerSession, d: AckDecision): boolean =>
  d.ok && before.ackedVersion === null && d.session.ackedVersion !== null;
