// A list with one entry per proxy, on one log line. The fleet may hold tens of thousands of proxies, and
// Cloud Logging refuses or cuts an entry over 256 KB: the line an operator needs would be the one lost.
// Logged instead as the full `count`, the first `max` entries, and `truncated: true` when some were left
// out. The lines that log such a list as `{count, proxies}` go through here, so a cut list reads the same
// way across the fleet; a site that logs more than a name per proxy maps the (short) `proxies` it gets.
// The passive pass's `deferred` / `uncounted` lines and rotation's `invalid_documents_skipped` (`skipped`)
// name their list differently and carry no flag.

/** Entries logged per list unless a site says otherwise: 100 names of at most 63 characters, under 8 KB. */
export const LOGGED_PROXIES = 100;

/** A type, not an interface: it goes where log fields (`Record<string, unknown>`) go. */
export type LoggedProxies<T> = {
  /** How many there are: always complete. */
  count: number;
  /** The first `max` of them, in the order given. */
  proxies: T[];
  /** Present when `proxies` holds fewer than `count`. */
  truncated?: true;
};

export function loggedProxies<T>(all: readonly T[], max = LOGGED_PROXIES): LoggedProxies<T> {
  if (all.length <= max) return { count: all.length, proxies: [...all] };
  return { count: all.length, proxies: all.slice(0, max), truncated: true };
}
