// How much of the outcome window one passive commit may take. The changed health documents and the cursor
// go in ONE batched write (passive-feed-store.ts), and Firestore rejects a commit of more than 500 writes
// (https://cloud.google.com/firestore/quotas#writes_and_transactions): with enough failing proxies an
// unbounded window would fail every tick and the cursor would never move. So the pass consumes batches
// oldest first only while the proxies whose state they could change stay within a cap, and the next tick
// continues from the last batch taken.
import type { OutcomeTally } from '../../../shared/src/domain/workers/outcomes.js';
import type { OutcomeBatchRecord } from '../../../shared/src/ports/workers.js';

/** Health documents one passive commit may write (plus the cursor): well inside the 500-write limit. */
export const PASSIVE_COMMIT_CAP = 400;

/** Any outcome that is not a success: only such a tally can turn an untracked proxy's signal into a failure. */
export const hasFailures = (t: OutcomeTally): boolean =>
  t.dial + t.proxyHandshake + t.responseHeaders + t.tunnel > 0;

/**
 * How many of `batches` (oldest first) to consume: the longest prefix whose proxies that `mayChange`
 * number at most `cap`. Batches are never split, and batches received at the same instant are taken or left
 * together (the cursor is that instant, and the next window starts strictly after it). The first such
 * group is always taken, whatever its size, so the cursor always moves.
 */
export function boundWindow(
  batches: readonly OutcomeBatchRecord[],
  mayChange: (proxy: string, tally: OutcomeTally) => boolean,
  cap: number = PASSIVE_COMMIT_CAP,
): number {
  const touched = new Set<string>();
  let taken = 0;
  while (taken < batches.length) {
    const instant = batches[taken]!.receivedAt.getTime();
    let end = taken;
    const group = new Set<string>();
    while (end < batches.length && batches[end]!.receivedAt.getTime() === instant) {
      for (const [proxy, t] of batches[end]!.tallies)
        if (!touched.has(proxy) && mayChange(proxy, t)) group.add(proxy);
      end++;
    }
    if (taken > 0 && touched.size + group.size > cap) break;
    for (const p of group) touched.add(p);
    taken = end;
  }
  return taken;
}
