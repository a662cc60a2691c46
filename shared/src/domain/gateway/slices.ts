// Work split into slices, for what a gateway worker does to take a snapshot on the thread that serves its
// traffic: decoding, verifying and compiling 10,000 proxies is ~120 ms of CPU in one piece on an idle
// core (`npm run bench -- snapshot`), during which no request moves. Written as a generator that yields
// between slices, the work stays pure and synchronous here; the worker's driver (functions/gateway/src/
// slices.ts) lets the event loop run at each yield, and everything else drains it in one go.

/** A computation of T that yields (nothing) at the end of each slice. */
export type Sliced<T> = Generator<void, T, void>;

/** Items handled between two yields: ~1–3 ms of any one of the steps on this class of machine. */
export const SLICE_ITEMS = 500;

/** Runs a sliced computation to its end without stopping: for callers with no traffic to let through. */
export function drain<T>(work: Sliced<T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}
