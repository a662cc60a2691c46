// Whether a worker takes the snapshots it is sent. A worker that cannot (its pull broken, a snapshot it
// cannot build, a process wedged) goes stale by its own rule after max_stale_age and refuses traffic, but
// it may still report — on the bound it last ACKed, which the API accepts — so its session stays live. The
// planner kept it as owner and renewed its grant with every snapshot it did not take: its proxies served
// no one for as long as the session lived (contract §2: unknown capacity must never be read as idle).
//
// The snapshot header records the ACK the worker owes: a version saved for its session that it has ACKed
// neither nor any later one, and when it was saved (nextAckOwed). A worker whose owed ACK is older than
// max_stale_age has stopped taking snapshots (or cannot tell the controller that it has): while another
// worker takes its snapshots it is withheld — given no proxies and no renewed grant, so its proxies drain
// and move once the grant it was given has lapsed: the crashed-worker path (contract §4), never two owners
// (snapshots/plan-pass.ts overdueWorkers). Its next ACK at or past the owed version ends it
// (functions/api/src/workers/session-service.ts asks for a pass then).

export interface AckOwed {
  /** A version the worker has not ACKed (nor any later one) since it was saved. */
  version: number;
  /** When that version was saved (the pass's clock). */
  since: Date;
}

/** The header fields the owed ACK is worked out from. */
export interface OwedHeader {
  sessionId: string | null;
  version: number;
  generatedAt: Date;
  ackOwed?: AckOwed | null;
}

/** The session a header's debt is asked about: its id, and the earlier sessions of the same process it
 *  took its ACK bound from (workers/session.ts boundFrom, newest first), whose debt it carries. */
export interface Debtor {
  sessionId: string;
  boundFrom?: readonly string[] | null;
}

/** Whether a header built for `headerSession` records the debt of `who`. */
const debtOf = (headerSession: string | null | undefined, who: Debtor): boolean =>
  headerSession === who.sessionId || (!!headerSession && !!who.boundFrom?.includes(headerSession));

/** The ACK a header records as owed by `who`: none when the header was built for another session. */
export const owedBy = (h: OwedHeader | null | undefined, who: Debtor): AckOwed | null =>
  debtOf(h?.sessionId, who) ? (h?.ackOwed ?? null) : null;

/**
 * What the header of the version being saved records: the owed ACK carried on while unpaid; once paid,
 * the previous version if that one is still unACKed (saved at its generatedAt: an ACK that paid the owed
 * one while a later version was being saved leaves that later one owed, not the version after it); else
 * this version.
 */
export function nextAckOwed(
  previous: OwedHeader | null,
  who: Debtor,
  ackedVersion: number | null,
  version: number,
  now: Date,
): AckOwed {
  const owed = owedBy(previous, who);
  if (owed && !settles(owed, ackedVersion)) return owed;
  if (previous && debtOf(previous.sessionId, who)) {
    const last = { version: previous.version, since: previous.generatedAt };
    if (!settles(last, ackedVersion)) return last;
  }
  return { version, since: now };
}

/** Whether an ACK bound pays the owed ACK: the owed version or a later one. */
const settles = (owed: AckOwed, ackedVersion: number | null): boolean =>
  ackedVersion !== null && ackedVersion >= owed.version;

/**
 * Whether the worker has owed an ACK for longer than max_stale_age: by now it has either stopped serving
 * (stale by its own rule) or taken snapshots it cannot acknowledge. `owed` must be the one recorded for
 * the session being asked about (null when it is another's or none is recorded).
 */
export function ackOverdue(
  owed: AckOwed | null | undefined,
  ackedVersion: number | null,
  now: Date,
  maxStaleAgeSeconds: number,
): boolean {
  if (!owed || settles(owed, ackedVersion)) return false;
  return now.getTime() - owed.since.getTime() >= maxStaleAgeSeconds * 1000;
}

/** Whether an ACK moving the bound from `before` to `after` pays an owed ACK that was overdue. */
export const endsOverdue = (
  owed: AckOwed | null | undefined,
  before: number | null,
  after: number | null,
  now: Date,
  maxStaleAgeSeconds: number,
): boolean => ackOverdue(owed, before, now, maxStaleAgeSeconds) && !!owed && settles(owed, after);
