// Worker sessions as the planner sees them once the worker has taken a snapshot: a session is given
// proxies only after its first ACK (snapshots/plan-pass.ts assignable), so tests of ownership start from
// sessions that have ACKed one.
import type { WorkerSession } from '../domain/workers/session.js';

/** The session with an ACK bound recorded (version 1 at `epoch` unless told), as acceptAck leaves it. */
export const acked = (s: WorkerSession, version = 1, epoch = 1): WorkerSession => ({
  ...s,
  ackedVersion: version,
  ackedEpoch: epoch,
  ackedChecksum: String(version).padStart(64, '0'),
});
