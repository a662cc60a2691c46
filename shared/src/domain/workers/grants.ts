// A worker's ownership grant: every proxy in its snapshots expires at the same instant, the grant, which
// the controller records before it publishes (so the recorded grant is never behind what a worker holds).
// A live worker's grant is renewed when less than `renewBeforeMs` remains; a lapsed session gets no
// renewal, so its proxies become movable once its grant has run out (ownership.ts: grantLapsed), nor does
// one shutting down or withheld for the snapshots it does not take (snapshots/plan-pass.ts).

export interface GrantSettings {
  grantMs: number;
  renewBeforeMs: number;
}

/** The grant a worker's next snapshot carries: the current one, or a renewal when it is due. */
export function nextGrant(current: Date | null, live: boolean, now: Date, s: GrantSettings): Date | null {
  if (!live) return current;
  if (current && current.getTime() - now.getTime() >= s.renewBeforeMs) return current;
  return new Date(now.getTime() + s.grantMs);
}

/**
 * usableUntil = expiresAt − allocationSafetyMargin (contract §3), exactly: a grant with less than the
 * margin left (a withheld worker's, whose grant is not renewed) gives an instant already past, so nothing
 * is allocated on it — never "now", which a worker whose clock runs a little behind would read as time
 * left inside the margin (and which would change the snapshot's digest on every pass).
 */
export function usableUntil(expiresAt: Date, marginMs: number): Date {
  return new Date(expiresAt.getTime() - Math.max(0, marginMs));
}
