// Worker sessions (contract §2): worker_id is the logical node, instance_id a process incarnation,
// session_id what stops an old process from reporting. A new instance supersedes the old session at once;
// a registration retry from the same live instance gets its session back (idempotent).

export interface WorkerSession {
  workerId: string;
  instanceId: string;
  sessionId: string;
  zone: string;
  protocolVersion: number;
  /** Who opened the session (e.g. "sa:gw@p.iam.gserviceaccount.com", "token:gw-1"): later calls must match. */
  principal: string;
  registeredAt: Date;
  /** Liveness: extended by every accepted runtime report; a lapsed session owns nothing. */
  validUntil: Date;
  /** The ACK bound: the snapshot the worker last acknowledged. */
  ackedVersion: number | null;
  ackedEpoch: number | null;
  ackedChecksum: string | null;
  /** The sessions of the same process this one took its ACK bound from, newest first (a protocol change,
   *  register; BOUND_FROM_KEPT at most): the ACK owed under any of them — the snapshot header records it
   *  under the session it was built for, which may be one or two changes back — is this one's too. */
  boundFrom?: readonly string[] | null;
  lastReportSequence: number | null;
  lastReportDigest: string | null;
  /** Highest accepted outcome batch sequence (per worker session). */
  outcomeSequence: number;
}

export interface RegisterRequest {
  workerId: string;
  instanceId: string;
  zone: string;
  protocolVersion: number;
  principal: string;
}

export type RegisterDecision =
  | { kind: 'resumed'; session: WorkerSession }
  | { kind: 'new'; session: WorkerSession; supersededSessionId: string | null };

/** Whether `req` comes from the live process `existing` was opened by: a retry, or a protocol change. */
const sameProcess = (
  existing: WorkerSession | null,
  req: RegisterRequest,
  now: Date,
): existing is WorkerSession =>
  existing !== null &&
  existing.instanceId === req.instanceId &&
  existing.principal === req.principal &&
  isLive(existing, now);

/** How many earlier sessions a session remembers taking its bound from: a process changes protocol version
 *  once per offer (every 10 minutes), and a snapshot for the new session is published within seconds. */
export const BOUND_FROM_KEPT = 4;

export function register(
  existing: WorkerSession | null,
  req: RegisterRequest,
  now: Date,
  newSessionId: string,
  sessionTtlMs: number,
): RegisterDecision {
  const same = sameProcess(existing, req, now);
  if (same && existing.protocolVersion === req.protocolVersion) {
    return { kind: 'resumed', session: existing };
  }
  // The same live process moving to another protocol version (control/protocol-upgrade.ts) still holds
  // the snapshot it ACKed, and every version reads an older one: it keeps its ACK bound. Without it the
  // new session was no owner that may keep its proxies (snapshots/plan-pass.ts assignable) at the pass its
  // registration asks for — every one of them started draining, its next snapshot listed none, and its
  // re-ACK of the one it held was refused stale_epoch once that pass committed: a gateway of the default
  // worker id (gw-<instance>) served nothing for seconds at every API rollout adding a protocol version.
  // Its ACK debt goes with the bound (boundFrom: the snapshot header records it under the session it was
  // built for, one of the earlier ones): dropped, a process withheld for an ACK it owes got its share back
  // by changing version.
  const bound = same
    ? {
        ackedVersion: existing.ackedVersion,
        ackedEpoch: existing.ackedEpoch,
        ackedChecksum: existing.ackedChecksum,
        boundFrom: [existing.sessionId, ...(existing.boundFrom ?? [])].slice(0, BOUND_FROM_KEPT),
      }
    : { ackedVersion: null, ackedEpoch: null, ackedChecksum: null };
  return {
    kind: 'new',
    supersededSessionId: existing?.sessionId ?? null,
    session: {
      workerId: req.workerId,
      instanceId: req.instanceId,
      sessionId: newSessionId,
      zone: req.zone,
      protocolVersion: req.protocolVersion,
      principal: req.principal,
      registeredAt: now,
      validUntil: new Date(now.getTime() + sessionTtlMs),
      ...bound,
      lastReportSequence: null,
      lastReportDigest: null,
      outcomeSequence: 0,
    },
  };
}

export const isLive = (s: WorkerSession, now: Date): boolean => s.validUntil.getTime() > now.getTime();

export type SessionCheck =
  | { ok: true }
  | { ok: false; error: 'unknown_worker' | 'stale_session' | 'session_expired' };

/** Every worker call names its session: a superseded or lapsed one is rejected. */
export function checkSession(current: WorkerSession | null, sessionId: string, now: Date): SessionCheck {
  if (!current) return { ok: false, error: 'unknown_worker' };
  if (current.sessionId !== sessionId) return { ok: false, error: 'stale_session' };
  if (!isLive(current, now)) return { ok: false, error: 'session_expired' };
  return { ok: true };
}

/** An accepted ACK or report is a sign of life: the session lives another TTL from now. */
export const touch = (s: WorkerSession, now: Date, sessionTtlMs: number): WorkerSession => ({
  ...s,
  validUntil: new Date(Math.max(s.validUntil.getTime(), now.getTime() + sessionTtlMs)),
});
