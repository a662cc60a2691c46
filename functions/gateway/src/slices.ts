// The worker's driver for sliced work (shared/src/domain/gateway/slices.ts): between two slices of taking
// a snapshot — decoding, verifying, compiling — the event loop runs, so requests keep moving while a
// 10,000-proxy snapshot is taken (docs/gateway.md § Taking a snapshot).
import type { Sliced } from '../../../shared/src/domain/gateway/slices.js';

/** What runs between two slices: by default a turn of the event loop (its I/O, then this). */
export type Pause = () => Promise<void>;

export const nextTurn: Pause = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function runSliced<T>(work: Sliced<T>, pause: Pause = nextTurn): Promise<T> {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
    await pause();
  }
}
