// A GatewayWorker's two clocks from one fake clock a test moves. The worker requires a monotonic clock for
// what it times in-process (WorkerOptions.monotonicNow: the stale age, the grant as it stood at the take,
// the drain bound); a test's fake clock stands for elapsed time (never a wall clock stepped back), so it
// drives both — a test that moved only the wall clock would age nothing. A test about a wall-clock step
// passes the two clocks apart instead.
/** A GatewayWorker's wall clock and monotonic clock, each in milliseconds. */
export type GatewayClocks = { now: () => number; monotonicNow: () => number };

export function gatewayClocks(now: () => number): GatewayClocks {
  return { now, monotonicNow: now };
}
