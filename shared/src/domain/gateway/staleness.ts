// When a worker may take new traffic (control-plane seed §3: "when no valid snapshot has been obtained
// for longer than max_stale_age, the Worker stops accepting new traffic and drains the requests it has").
// A snapshot also stops being valid at its own validUntil. A stale worker comes back as soon as a valid
// snapshot arrives; shutting down is final.
//
// Two clocks: the age bound is a local duration, measured on a monotonic clock that no wall-clock step
// (NTP, a VM migration) moves; validUntil is the controller's wall-clock instant (the end of the ownership
// grant), so it is checked on the wall clock, and also on the monotonic clock from the moment the snapshot
// was taken: a wall clock stepped back must not stretch a grant, one stepped forward ends it sooner.
// Counted from the take, the grant left is never more than the whole grant from the snapshot's generatedAt
// (grantLeftMs): a host clock behind the controller's would otherwise stretch it by the lag.
export type StalenessPhase = 'awaiting_snapshot' | 'fresh' | 'stale' | 'shutting_down';

export interface StalenessState {
  readonly phase: StalenessPhase;
  /** When the last valid snapshot (full or delta) was taken, on the monotonic clock. */
  readonly lastValidAtMs: number | null;
  /** The snapshot's validUntil, on the wall clock. */
  readonly validUntilMs: number | null;
  /** The grant's end on the monotonic clock: the take plus what was left of it then (grantLeftMs). */
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

/** A snapshot as it is taken: the two clocks now, and the controller's wall-clock instants it carries. */
export type SnapshotTake = StalenessClock & { validUntilMs: number; generatedAtMs: number };

/**
 * The controller's clock-skew allowance (CLOCK_SKEW_SECONDS' default, docs/gateway-control-plane.md
 * § Settings): a snapshot generated further ahead of this host's wall clock says the clock runs behind.
 */
export const CLOCK_SKEW_ALLOWANCE_MS = 5_000;

/**
 * How much of the grant is left as the snapshot is taken, to be counted on the monotonic clock: validUntil
 * less the wall clock now, but never more than validUntil less generatedAt, the whole grant as the
 * controller made it. A host clock behind the controller's by Δ reads Δ more than is left, and the grant
 * would end Δ late in controller time — while the controller hands the proxies to another worker once the
 * grant has lapsed plus its skew allowance (5 s): two owners. Bounded so, the overrun is at most the time
 * the snapshot took to arrive, whatever the lag. A clock that is right (or ahead) reads no more than the
 * whole grant, so for it nothing changes.
 */
export const grantLeftMs = (at: SnapshotTake): number =>
  Math.min(at.validUntilMs - at.wallMs, at.validUntilMs - at.generatedAtMs);

/**
 * How far this host's wall clock runs behind the controller's, as a snapshot taken shows it (generated
 * "later" than now), when that is more than the skew allowance; else null. The grant is safe from it
 * (grantLeftMs), but every other wall-clock instant of the snapshot — each entry's usableUntil and
 * expiresAt, checked on the data path — is read that much late.
 */
export function clockBehindMs(at: SnapshotTake): number | null {
  const behind = at.generatedAtMs - at.wallMs;
  return behind > CLOCK_SKEW_ALLOWANCE_MS ? behind : null;
}

export function onSnapshotTaken(
  state: StalenessState,
  at: SnapshotTake,
  policy: StalenessPolicy,
): StalenessState {
  if (state.phase === 'shutting_down') return state;
  const taken: StalenessState = {
    phase: 'fresh',
    lastValidAtMs: at.monoMs,
    validUntilMs: at.validUntilMs,
    validUntilMonoMs: at.monoMs + grantLeftMs(at),
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
