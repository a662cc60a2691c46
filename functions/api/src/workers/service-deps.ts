// What the worker endpoints need, and the steps every session call shares: load the worker, check the
// session (contract §2: a superseded or lapsed session is refused) and that the caller is the principal
// that opened it, and retry a read-decide-write when another replica wrote first.
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { checkSession } from '../../../../shared/src/domain/workers/session.js';
import type { WorkerSettings } from '../../../../shared/src/domain/workers/settings.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import {
  type Versioned,
  type WorkerRecord,
  type WorkerStore,
  WorkerStoreError,
} from '../../../../shared/src/ports/workers.js';
import type { OwnershipStore } from '../../../../shared/src/ports/workers-ownership.js';
import type {
  SnapshotRequester,
  SnapshotStore,
  WorkerSubscriptions,
} from '../../../../shared/src/ports/workers-snapshots.js';
import type { WorkerPrincipal } from './auth.js';
import { conflict, WorkerApiError } from './errors.js';

export interface WorkerServiceDeps {
  workers: WorkerStore;
  ownership: Pick<OwnershipStore, 'epoch'>;
  snapshots: Pick<SnapshotStore, 'header' | 'loadFull'>;
  subscriptions: WorkerSubscriptions;
  requester: SnapshotRequester;
  clock: Clock;
  log: Logger;
  settings: WorkerSettings;
  newSessionId(): string;
}

export const WRITE_ATTEMPTS = 5;

export function authorise(principal: WorkerPrincipal, workerId: string): void {
  if (!principal.may(workerId)) {
    throw new WorkerApiError(403, 'forbidden', `${principal.label} may not act as worker ${workerId}`);
  }
}

/**
 * The worker's record, with its session checked for `sessionId` and the caller. `lapsed: 'caller'`: a
 * lapsed session that is still the worker's current one is the caller's to judge (a runtime report: the
 * last word of a worker shutting down idle counts on it, runtime-report.ts).
 */
export async function loadSession(
  deps: WorkerServiceDeps,
  principal: WorkerPrincipal,
  workerId: string,
  sessionId: string,
  lapsed: 'refuse' | 'caller' = 'refuse',
): Promise<Versioned<WorkerRecord>> {
  authorise(principal, workerId);
  const stored = await deps.workers.get(workerId);
  const record = stored?.value ?? null;
  const check = checkSession(record?.session ?? null, sessionId, deps.clock.now());
  if (!check.ok && !(check.error === 'session_expired' && lapsed === 'caller')) {
    throw conflict(check.error, sessionMessage[check.error]);
  }
  if (record!.session.principal !== principal.label) {
    throw new WorkerApiError(403, 'forbidden', 'the session was opened by another identity');
  }
  return { value: record!, token: stored!.token };
}

export const sessionMessage = {
  unknown_worker: 'no session for this worker: register',
  stale_session: 'this session was superseded by a newer registration',
  session_expired: 'this session lapsed: register again',
} as const;

/** Runs a read-decide-write until it lands on the state it read (another replica may write between). */
export async function withRetry<T>(what: string, attempt: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof WorkerStoreError) || err.kind !== 'conflict') throw err;
      if (i >= WRITE_ATTEMPTS) {
        throw new WorkerStoreError('conflict', `${what}: still contended after ${i} attempts`, {
          cause: err,
        });
      }
    }
  }
}

/** Best effort: the snapshot-tick runs a pass anyway, so a failed request is logged, not raised. */
export async function requestPass(
  deps: Pick<WorkerServiceDeps, 'requester' | 'log'>,
  reason: string,
  workerId?: string,
): Promise<void> {
  try {
    await deps.requester.request({ reason, ...(workerId ? { workerId } : {}) });
  } catch (err) {
    deps.log.warn('snapshot request not sent; the next tick will run the pass', {
      reason,
      workerId,
      error: err,
    });
  }
}

/**
 * `write`, which would make a transition the snapshot pass is to be asked about (`pass`). Given up at its
 * deadline (`unavailable`: the store call's own bound, or the request's budget) it may land all the same,
 * the caller hearing 503: the pass is asked for now — best effort, and a pass is idempotent — before the
 * 503 goes out. Landed, the write made its transition, and the caller's retry finds it made and asks for
 * nothing (a new report is no transition; the routing unchanged; the reclaim gone) — a replay, an ACK's or a
 * runtime report's same sequence, does ask again. A write that lands only after that pass has read the
 * record waits for the next tick (docs/gateway-control-plane.md § Runtime report).
 */
export async function writeAsking<T>(
  deps: Pick<WorkerServiceDeps, 'requester' | 'log'>,
  write: () => Promise<T>,
  pass: string | null,
  workerId?: string,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (pass !== null && err instanceof WorkerStoreError && err.kind === 'unavailable')
      await requestPass(deps, pass, workerId);
    throw err;
  }
}
