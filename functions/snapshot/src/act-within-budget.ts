// A pass's worker steps, `concurrency` at once, none started past the pass's deadline (pass.ts
// SNAPSHOT_PASS_BUDGET_MS): a step already running finishes (bounded by its own calls' deadlines), the
// ones not started are returned as left, for the next pass — their headers untouched, they are still due.
import pLimit from 'p-limit';
import type { Clock } from '../../../shared/src/ports/clock.js';

export interface Budgeted<T, R> {
  /** What each started step returned, in the order of the steps. */
  results: R[];
  /** The steps not started: the deadline had passed when their turn came. */
  left: T[];
}

export async function actWithinBudget<T, R>(
  steps: readonly T[],
  opts: { concurrency: number; clock: Clock; deadline: Date },
  act: (step: T) => Promise<R>,
): Promise<Budgeted<T, R>> {
  const left: T[] = [];
  const skipped = Symbol('skipped');
  const all = await pLimit(opts.concurrency).map(steps, async (step) => {
    if (opts.clock.now().getTime() >= opts.deadline.getTime()) {
      left.push(step);
      return skipped;
    }
    return act(step);
  });
  return { results: all.filter((r): r is Awaited<R> => r !== skipped) as R[], left };
}
