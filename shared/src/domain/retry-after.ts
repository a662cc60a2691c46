// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP date. Read by the gateway's control client and
// the crawlers' lease client alike. Pure: the time is the caller's.

/** The wait the header asks for, in milliseconds from `nowMs`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
