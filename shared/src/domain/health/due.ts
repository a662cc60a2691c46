// When each proxy is due for a probe. Every proxy has its own interval and a phase inside it derived from
// its uid, so the first probe is jittered across the interval (seed §6) and a fleet created at once does
// not probe in lockstep. Due-ness is a pure function of (uid, interval, window): nothing per proxy is
// persisted to remember "next probe at", which is what keeps a steady fleet at zero writes per tick.

/** The proxy's slot boundaries are phase + k × interval; it is due when one falls in (from, to]. */
export function isDueInWindow(uid: string, intervalMs: number, from: Date, to: Date): boolean {
  if (intervalMs <= 0) return true;
  const phase = Math.floor(hashFraction(uid) * intervalMs);
  const slot = (t: number) => Math.floor((t - phase) / intervalMs);
  return slot(to.getTime()) > slot(from.getTime());
}

/** The first slot boundary strictly after `after` (used to sleep until the next due probe). */
export function nextSlotAfter(uid: string, intervalMs: number, after: Date): Date {
  const phase = Math.floor(hashFraction(uid) * intervalMs);
  const k = Math.floor((after.getTime() - phase) / intervalMs) + 1;
  return new Date(phase + k * intervalMs);
}

/** FNV-1a of the string, as a fraction in [0, 1). */
export function hashFraction(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 0x1_0000_0000;
}
