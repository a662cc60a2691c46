// How far apart one proxy's checks are. A pass checks the proxies with a slot in its window (due.ts), and it
// begins when the pass before it has ended: after a slow pass (a dead proxy's timeoutSeconds) it begins late,
// checks a proxy for a slot long past, and the next pass checks it again at its next slot — seconds later.
// Its failures were then counted twice in a moment: Unhealthy an interval or more before its
// failureThreshold says. So a pass leaves out
// - a proxy this run checked less than half its interval ago: its next check is at its slot after that one,
//   one to one and a half intervals after the last;
// - near the run's end, a proxy the next run will check within half an interval: one with a slot from this
//   run's deadline (where the next run's first window starts: firstWindowStart) to half an interval from now
//   — and no later than the next run's own deadline, when runs do not chain (a loop shorter than the tick:
//   a slot after it is the run after next's) — when the next run is due to start by then too (its tick). A
//   run that loops not at all (PROBE_LOOP_SECONDS 0: its deadline is its start) leaves out only proxies with
//   a slot before the next run's start, which that run checks at its start.
// Neither starves a proxy: each leaves it out only for a check that comes within half an interval. The time
// recorded is the pass's start: a check queued behind `concurrency` others starts later, so two checks may be
// a little closer than half an interval.
import { isDueInWindow } from '../../../shared/src/domain/health/due.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';

const intervalOf = (p: ProxyResource): number => p.spec.healthCheck.intervalSeconds * 1000;

/** One run's record of when it checked each proxy (a pass's start), and the proxies a pass may check. */
export class CheckSpacing {
  private readonly checkedAt = new Map<string, number>();

  /**
   * The proxies a pass begun at `now` may check: the fleet less those left out above. `next` is where the
   * next run's first window starts (this run's deadline), when that run is due (this run's start plus the
   * tick period) and the end of what it checks (its deadline; unset when the runs chain, a loop as long as
   * the tick or longer).
   */
  eligible(
    all: readonly ProxyResource[],
    now: Date,
    next: { from: Date; at: Date; until?: Date },
  ): ProxyResource[] {
    return all.filter((p) => {
      const half = intervalOf(p) / 2;
      const last = this.checkedAt.get(p.name);
      if (last !== undefined && now.getTime() - last < half) return false;
      const soon = now.getTime() + half;
      if (next.at.getTime() > soon) return true;
      const end = new Date(Math.min(soon, next.until?.getTime() ?? soon));
      return !isDueInWindow(p.uid, intervalOf(p), next.from, end);
    });
  }

  /** Records the proxies of `checked` that a pass over (from, to] begun at `now` was due to check. */
  record(checked: readonly ProxyResource[], from: Date, to: Date, now: Date): void {
    for (const p of checked) {
      if (isDueInWindow(p.uid, intervalOf(p), from, to)) this.checkedAt.set(p.name, now.getTime());
    }
  }
}
