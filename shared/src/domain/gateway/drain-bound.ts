// How long a proxy being drained away from this worker may keep its open requests (contract seed §4: the
// controller clears the ownership once the worker reports the proxy's active and reserved counts at zero).
// The seed sets no bound, so one CONNECT tunnel that keeps moving bytes held a drain for as long as it
// ran: a pool proxy reclaimed for an exclusive lease stayed unleasable, a rebalance or a deletion waited,
// for hours if a crawler kept a stream open. Past the bound what is still open on the proxy is cut (the
// listener's sweep reads `cut`), the counts fall to zero and the controller's next pass ends the drain.
//
// A proxy is draining while it is revoked (revokeProxyIds) or missing from the snapshot in use (one the
// snapshot lists but the worker left out for its credentials is not: it is still owned here). The time
// is the monotonic clock's (any origin): no wall-clock step stretches or shortens a drain.

/** A proxy's drain as the worker's tick keeps it; held beside its live counts (routing.ts). */
export interface DrainMark {
  /** When the proxy was first seen draining, on the monotonic clock; null while it is not. */
  readonly drainingSinceMs: number | null;
  /** The drain outlived its bound: whatever is open on the proxy is to be cut. */
  readonly cut: boolean;
}

export const notDraining: DrainMark = { drainingSinceMs: null, cut: false };

/**
 * The mark after a tick at `nowMs`: a drain starts when first seen, ends (and un-cuts) when the proxy is
 * back, and is cut once it has lasted `boundMs` (0: never, the seed's unbounded drain). `cutNow` is true
 * on the one tick the cut begins (the caller logs it).
 */
export function nextDrainMark(
  prev: DrainMark,
  draining: boolean,
  nowMs: number,
  boundMs: number,
): DrainMark & { cutNow: boolean } {
  if (!draining) return { ...notDraining, cutNow: false };
  const since = prev.drainingSinceMs ?? nowMs;
  const cut = prev.cut || (boundMs > 0 && nowMs - since >= boundMs);
  return { drainingSinceMs: since, cut, cutNow: cut && !prev.cut };
}
