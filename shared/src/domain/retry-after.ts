// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP date. Read by the gateway's control client and
// the crawlers' lease client alike. Pure: the time is the caller's. And what the API's two clients (the
// typed client and the CLI) retry of an idempotent request whose answer was lost, shared by both.

/**
 * Answers that do not say whether the request was served (an internal error after a commit, the front
 * end's 502 for an instance that died mid-request, its 504 for one that took too long).
 */
export const LOST_ANSWER_STATUSES: ReadonlySet<number> = new Set([500, 502, 504]);
/** How many times a request whose answer was lost is sent again, and how long apart. */
export const LOST_ANSWER_RETRIES = 2;
export const LOST_ANSWER_WAIT_MS = 1000;

/** The wait the header asks for, in milliseconds from `nowMs`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
