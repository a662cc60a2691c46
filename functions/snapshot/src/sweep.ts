// The storage sweep, run after a tick's pass: the parts of snapshots whose grant ended long ago (a dead
// gateway instance's; Cloud Run registers a worker id per instance) are deleted, their small headers
// kept so that a worker id that comes back (pinned ids: GATEWAY_WORKER_ID) continues above its old
// version. Bounded per tick and idempotent (the store re-checks each header in a transaction). Whole
// workers (document, header, outcome batches) go later, past retention, once the epoch has moved past
// their header (retention.ts). A failed sweep is logged and left to the next tick — it must never cost the
// pass that ran before it — and one header that fails costs only itself: the ones swept before it are
// still logged and counted. Given the tick's upkeep deadline (handler.ts UPKEEP_DEADLINE_MS), no sweep is
// begun past it (the batch is then the next tick's). The batch is one call to the store, not cut between
// headers: one a call would either stop at a failed header (it is listed first again) or sweep it twice.
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SnapshotPassDeps } from './deps.js';

export interface SweepCounts {
  swept: number;
  /** Headers whose sweep failed, or 1 when the old headers could not even be listed. */
  failures: number;
}

export async function sweepOldSnapshots(
  deps: Pick<SnapshotPassDeps, 'snapshots' | 'clock' | 'log' | 'sweep'>,
  /** Epoch ms by deps.clock past which the sweep is not begun; none: always. */
  deadline?: number,
): Promise<SweepCounts> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - deps.sweep.afterMs);
  try {
    if (deadline !== undefined && now.getTime() >= deadline) {
      deps.log.info('upkeep deadline reached: old snapshot parts left to the next tick', {
        event: 'gateway.upkeep_deadline_reached',
        step: 'sweep',
        swept: 0,
      });
      return { swept: 0, failures: 0 };
    }
    const { swept, failed } = await deps.snapshots.sweepParts(cutoff, deps.sweep.batch, now);
    if (swept.length > 0) {
      deps.log.info('old snapshot parts swept', {
        event: 'gateway.snapshots_swept',
        workers: swept,
        grantEndedBefore: cutoff.toISOString(),
      });
    }
    // The worker id and the kind only: the cause would carry Firestore's text, which is not needed here.
    for (const f of failed) {
      deps.log.warn('sweep of one old snapshot failed; the next tick tries again', {
        workerId: f.workerId,
        kind: f.kind,
      });
    }
    return { swept: swept.length, failures: failed.length };
  } catch (err) {
    deps.log.warn('snapshot sweep failed; the next tick tries again', {
      kind: err instanceof WorkerStoreError ? err.kind : 'unknown',
      error: err,
    });
    return { swept: 0, failures: 1 };
  }
}
