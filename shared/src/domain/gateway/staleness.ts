// When a worker may take new traffic (control-plane seed §3: "when no valid snapshot has been obtained
// for longer than max_stale_age, the Worker stops accepting new traffic and drains the requests it has").
// A snapshot also stops being valid at its own validUntil. A stale worker comes back as soon as a valid
// snapshot arrives; shutting down is final.
//
// Two clocks: the age bound is a local duration, measured on a monotonic clock that no wall-clock step
// (NTP, a VM migration) moves; validUntil is the controller's wall-clock instant (the end of the ownership
// grant), so it is checked on the wall clock, and also on the monotonic clock from the moment the snapshot
// was taken: a wall clock stepped back must not stretch a grant, one stepped forward ends it sooner.
export type StalenessPhase = 'awaiting_snapshot' | 'fresh' | 'stale' | 'shutting_down';

export interface StalenessState {
  readonly phase: StalenessPhase;
  /** When the last valid snapshot (full or delta) was taken, on the monotonic clock. */
  readonly lastValidAtMs: number | null;
  /** The snapshot's validUntil, on the wall clock. */
  readonly validUntilMs: number | null;
  /** The same instant on the monotonic clock, as it stood when the snapshot was taken. */
  readonly validUntilMonoMs: number | null;
}

/** The time now on both clocks: `wallMs` since the epoch, `monoMs` from any fixed origin. */
export interface StalenessClock {
  readonly wallMs: number;
  readonly monoMs: number;
}

export interface StalenessPolicy {
  /** Infinity disables the age bound (standalone mode with a static file). */
  readonly maxStaleAgeMs: number;
}

export const initialStaleness: StalenessState = {
  phase: 'awaiting_snapshot',
  lastValidAtMs: null,
  validUntilMs: null,
  validUntilMonoMs: null,
};

export function onSnapshotTaken(
  state: StalenessState,
  at: StalenessClock & { validUntilMs: number },
  policy: StalenessPolicy,
): StalenessState {
  if (state.phase === 'shutting_down') return state;
  const taken: StalenessState = {
    phase: 'fresh',
    lastValidAtMs: at.monoMs,
    validUntilMs: at.validUntilMs,
    validUntilMonoMs: at.monoMs + (at.validUntilMs - at.wallMs),
  };
  return evaluateStaleness(taken, at, policy);
}

export function evaluateStaleness(
  state: StalenessState,
  now: StalenessClock,
  policy: StalenessPolicy,
): StalenessState {
  if (state.phase === 'shutting_down' || state.lastValidAtMs === null) return state;
  const phase: StalenessPhase = outlived(state, now, policy) ? 'stale' : 'fresh';
  return phase === state.phase ? state : { ...state, phase };
}

/**
 * Whether the last snapshot taken is past the stale age or its grant, whatever the phase: a shutdown
 * drains what was admitted before it, but does not make a stale snapshot fresh again for a request whose
 * look-up outlasted it. False with no snapshot taken.
 */
export function outlived(state: StalenessState, now: StalenessClock, policy: StalenessPolicy): boolean {
  if (state.lastValidAtMs === null) return false;
  return now.monoMs - state.lastValidAtMs > policy.maxStaleAgeMs || grantEnded(state, now);
}

/**
 * Whether the ownership grant of the last snapshot taken has ended: its validUntil, which is every entry's
 * expiresAt (the controller grants a worker all its proxies until one instant), on either clock as above.
 * Contract seed §3 calls expiresAt a hard expiry: usableUntil ends new picks before it, and at it the
 * worker stops using its proxies at all — what is still open on them is cut (worker.ts grantOver). A
 * controller that has not renewed the grant hands the proxies to other workers once it has lapsed (plus
 * its clock-skew allowance), so a tunnel running on past it would give the proxy a second user.
 * Whatever the phase: a worker shutting down holds its proxies under the same grant.
 */
export function grantEnded(state: StalenessState, now: StalenessClock): boolean {
  return (
    (state.validUntilMs !== null && now.wallMs >= state.validUntilMs) ||
    (state.validUntilMonoMs !== null && now.monoMs >= state.validUntilMonoMs)
  );
}

export const onShutdown = (state: StalenessState): StalenessState =>
  state.phase === 'shutting_down' ? state : { ...state, phase: 'shutting_down' };

export const acceptsTraffic = (state: StalenessState): boolean => state.phase === 'fresh';

/** The stable error code a refused request carries in each phase. */
export function refusalCode(
  phase: StalenessPhase,
): 'no_snapshot' | 'snapshot_stale' | 'shutting_down' | null {
  switch (phase) {
    case 'awaiting_snapshot':
      return 'no_snapshot';
    case 'stale':
      return 'snapshot_stale';
    case 'shutting_down':
      return 'shutting_down';
    default:
      return null;
  }
}
