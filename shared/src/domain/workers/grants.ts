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

/** usableUntil = expiresAt − allocationSafetyMargin (contract §3), clamped to [now, expiresAt]. */
export function usableUntil(expiresAt: Date, marginMs: number, now: Date): Date {
  const t = expiresAt.getTime();
  return new Date(Math.min(t, Math.max(now.getTime(), t - marginMs)));
}
