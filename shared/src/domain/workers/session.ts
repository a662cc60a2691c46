// Worker sessions (contract §2): worker_id is the logical node, instance_id a process incarnation,
// session_id what stops an old process from reporting. A new instance supersedes the old session at once;
// a registration retry from the same live instance gets its session back (idempotent).

export interface WorkerSession {
  workerId: string;
  instanceId: string;
  sessionId: string;
  zone: string;
  protocolVersion: number;
  registeredAt: Date;
  /** Liveness: extended by every accepted runtime report; a lapsed session owns nothing. */
  validUntil: Date;
  /** The ACK bound: the snapshot the worker last acknowledged. */
  ackedVersion: number | null;
  ackedEpoch: number | null;
  ackedChecksum: string | null;
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
}

export type RegisterDecision =
  | { kind: 'resumed'; session: WorkerSession }
  | { kind: 'new'; session: WorkerSession; supersededSessionId: string | null };

export function register(
  existing: WorkerSession | null,
  req: RegisterRequest,
  now: Date,
  newSessionId: string,
  sessionTtlMs: number,
): RegisterDecision {
  if (existing && existing.instanceId === req.instanceId && isLive(existing, now)) {
    return { kind: 'resumed', session: existing };
  }
  return {
    kind: 'new',
    supersededSessionId: existing?.sessionId ?? null,
    session: {
      workerId: req.workerId,
      instanceId: req.instanceId,
      sessionId: newSessionId,
      zone: req.zone,
      protocolVersion: req.protocolVersion,
      registeredAt: now,
      validUntil: new Date(now.getTime() + sessionTtlMs),
      ackedVersion: null,
      ackedEpoch: null,
      ackedChecksum: null,
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
