// How often to look again at an instance GCE is holding — booting (PENDING while it waits for capacity,
// STAGING, REPAIRING) or still being created, so that a delete is refused — as the hold lasts: the arm's
// own interval while it holds as instances do (a minute or two), then a tenth of how long it has held, up
// to a minute. A fixed 5 s cost a pass, Compute calls, a status write (its due time) and a publish every
// 5 s for as long as the hold: 17,000 of each a day, a fleet's worth during a capacity stall.

/** The longest wait between two looks at a held instance (or the arm's own interval if longer). */
const HELD_POLL_MAX_MS = 60_000;

/** The wait before the next look at an instance held for `heldMs`, by an arm that polls every `baseMs`. */
export function heldPollMs(baseMs: number, heldMs: number): number {
  return Math.round(Math.min(Math.max(baseMs, heldMs / 10), Math.max(baseMs, HELD_POLL_MAX_MS)));
}
