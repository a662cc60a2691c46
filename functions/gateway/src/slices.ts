// The worker's driver for sliced work (shared/src/domain/gateway/slices.ts): between two slices of taking
// a snapshot — decoding, verifying, compiling — the event loop runs, so requests keep moving while a
// 10,000-proxy snapshot is taken (docs/gateway.md § Snapshot format, "What taking one costs").
import type { Sliced } from '../../../shared/src/domain/gateway/slices.js';

/** What runs between two slices: by default a turn of the event loop (its I/O, then this). */
export type Pause = () => Promise<void>;

export const nextTurn: Pause = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs `work` to its end, pausing before its first slice and between each two: the steps of taking one
 * snapshot run one after the other, so without the first pause the last slice of a step and the first of
 * the next (and whatever the caller does in between) would run as one.
 */
export async function runSliced<T>(work: Sliced<T>, pause: Pause = nextTurn): Promise<T> {
  for (;;) {
    await pause();
    const step = work.next();
    if (step.done) return step.value;
  }
}
