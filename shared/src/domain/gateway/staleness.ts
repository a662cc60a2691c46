// When a worker may take new traffic (control-plane seed §3: "when no valid snapshot has been obtained
// for longer than max_stale_age, the Worker stops accepting new traffic and drains the requests it has").
// A snapshot also stops being valid at its own validUntil. A stale worker comes back as soon as a valid
// snapshot arrives; shutting down is final.
export type StalenessPhase = 'awaiting_snapshot' | 'fresh' | 'stale' | 'shutting_down';

export interface StalenessState {
  readonly phase: StalenessPhase;
  /** When the last valid snapshot (full or delta) was taken. */
  readonly lastValidAtMs: number | null;
  readonly validUntilMs: number | null;
}

export interface StalenessPolicy {
  /** Infinity disables the age bound (standalone mode with a static file). */
  readonly maxStaleAgeMs: number;
}

export const initialStaleness: StalenessState = {
  phase: 'awaiting_snapshot',
  lastValidAtMs: null,
  validUntilMs: null,
};

export function onSnapshotTaken(
  state: StalenessState,
  at: { nowMs: number; validUntilMs: number },
  policy: StalenessPolicy,
): StalenessState {
  if (state.phase === 'shutting_down') return state;
  return evaluateStaleness(
    { phase: 'fresh', lastValidAtMs: at.nowMs, validUntilMs: at.validUntilMs },
    at.nowMs,
    policy,
  );
}

export function evaluateStaleness(
  state: StalenessState,
  nowMs: number,
  policy: StalenessPolicy,
): StalenessState {
  if (state.phase === 'shutting_down' || state.lastValidAtMs === null) return state;
  const tooOld = nowMs - state.lastValidAtMs > policy.maxStaleAgeMs;
  const expired = state.validUntilMs !== null && nowMs >= state.validUntilMs;
  const phase: StalenessPhase = tooOld || expired ? 'stale' : 'fresh';
  return phase === state.phase ? state : { ...state, phase };
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
