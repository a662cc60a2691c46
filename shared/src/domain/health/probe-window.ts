// Where a probe run's first window starts, from the record of the run before it (docs/health.md § "When a
// proxy is probed"). Pure: the handler passes the claimed previous run and its own start.

/** What the probe needs of the previous run's record (JobRun fits). */
export interface PreviousProbeRun {
  startedAt: Date;
  /** true: finished; false: failed; null: still running, or killed before it could record its end. */
  ok: boolean | null;
  /** Where its own first window started; for a failed run, where the first window it did not store
   *  started (null or absent on records written before it was recorded). */
  windowStart?: Date | null;
  /** Its deadline (startedAt + its loop), as recorded at its claim; null or absent on records claimed
   *  before it was recorded. */
  deadline?: Date | null;
  /** For a finished run whose budget ended its loop before its deadline: where the slots it left start. */
  nextWindowStart?: Date | null;
}

export interface ProbeCadence {
  /** The Scheduler period. */
  tickPeriodMs: number;
  /** How long a run keeps probing after its start (its deadline is startedAt + loopMs); for the previous
   *  run, only when its record holds no deadline of its own. */
  loopMs: number;
}

/**
 * A window never starts more than this many tick periods before the run's start. Enough to probe again in
 * full the window of one failed run (it starts at the deadline of the run before it: 2 ticks − loop back),
 * with room for a late tick, and of two failed runs in a row with the loop deployed (3 ticks − loop).
 * After a longer outage the slots before that are probed at their next slot: a window reaching back
 * without bound would probe the whole fleet at the tick instant on every run of a job that keeps failing.
 */
export const MaxLookBackTicks = 3;

/**
 * Where the previous run's coverage ends, so that no slot is probed twice for nothing and none is missed:
 * - none (first run ever): one tick period back;
 * - finished: its deadline (as its record holds it, else startedAt + this loop) — or where the slots its
 *   spent budget left start (nextWindowStart; only when it finished before this run claimed) — never ahead of now: it probed every slot up to there, and starting from its start would probe most of the fleet a second time
 *   at this tick's instant (thresholds reached twice as fast as intervalSeconds says, the per-uid jitter
 *   lost);
 * - still running (a slow last pass, or a loop longer than the tick): its deadline even when ahead — it is
 *   covering its window itself. A killed run reads the same; the slots of its lost pass wait for their next;
 * - failed: where the first window it did not store started (its own first window's start — the deadline
 *   of the run before it, or further back if that one failed too — when it stored none), never ahead of
 *   now: it may have probed without storing, and re-probing what it did not store is the safe side. A
 *   record without it (written before it was recorded): one tick period before its start.
 * Never more than MaxLookBackTicks tick periods back.
 */
export function firstWindowStart(
  previous: PreviousProbeRun | null,
  startedAt: Date,
  cfg: ProbeCadence,
): Date {
  const now = startedAt.getTime();
  if (!previous) return new Date(now - cfg.tickPeriodMs);
  // Its own, as recorded: this run's loop is this deployment's, and after a deploy that changed it the
  // previous run's deadline computed from it would probe one window twice (50 s → 0: its slots counted
  // twice) or skip one (0 → 50 s: its slots an interval late).
  const deadline = previous.deadline?.getTime() ?? previous.startedAt.getTime() + cfg.loopMs;
  let from: number;
  if (previous.ok === null) from = deadline;
  else if (previous.ok) from = Math.min(previous.nextWindowStart?.getTime() ?? deadline, now);
  else
    from = Math.min(previous.windowStart?.getTime() ?? previous.startedAt.getTime() - cfg.tickPeriodMs, now);
  return new Date(Math.max(from, now - MaxLookBackTicks * cfg.tickPeriodMs));
}
