// How far apart one proxy's checks are. A pass checks the proxies with a slot in its window (due.ts), and it
// begins when the pass before it has ended: after a slow pass (a dead proxy's timeoutSeconds) it begins late,
// checks a proxy for a slot long past, and the next pass checks it again at its next slot — seconds later.
// Its failures were then counted twice in a moment: Unhealthy an interval or more before its
// failureThreshold says. So a pass leaves out
// - a proxy this run checked less than half its interval ago: its next check is at its slot after that one,
//   one to one and a half intervals after the last;
// - in a window cut at the run's deadline (a pass begun after it), a proxy with a slot from the deadline to
//   half an interval from now: the next run starts at the deadline (firstWindowStart) and checks it there.
//   A slot in (deadline, now] is that run's already (it may be probing it this moment); one less than half
//   an interval away would come right after this late check.
// Neither starves a proxy: each leaves it out only for a check that comes within half an interval.
import { isDueInWindow } from '../../../shared/src/domain/health/due.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';

const intervalOf = (p: ProxyResource): number => p.spec.healthCheck.intervalSeconds * 1000;

/** One run's record of when it checked each proxy (a pass's start), and the proxies a pass may check. */
export class CheckSpacing {
  private readonly checkedAt = new Map<string, number>();

  /** The proxies a pass over (from, to] begun at `now` may check: the fleet less those left out above. */
  eligible(all: readonly ProxyResource[], to: Date, now: Date): ProxyResource[] {
    const cut = to < now;
    return all.filter((p) => {
      const half = intervalOf(p) / 2;
      const last = this.checkedAt.get(p.name);
      if (last !== undefined && now.getTime() - last < half) return false;
      return !cut || !isDueInWindow(p.uid, intervalOf(p), to, new Date(now.getTime() + half));
    });
  }

  /** Records the proxies of `checked` that a pass over (from, to] begun at `now` was due to check. */
  record(checked: readonly ProxyResource[], from: Date, to: Date, now: Date): void {
    for (const p of checked) {
      if (isDueInWindow(p.uid, intervalOf(p), from, to)) this.checkedAt.set(p.name, now.getTime());
    }
  }
}
