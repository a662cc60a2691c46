// Worker retention, run after a tick's pass and parts sweep: everything stored for workers whose session,
// snapshot and grant all ended longer than the retention ago (WORKER_RETENTION_SECONDS, 7 days) — their
// worker document, snapshot header and parts, outcome batches — is deleted (domain/workers/retention.ts
// decides; the store re-reads each worker in the deleting transaction). Cloud Run registers a worker id
// per gateway instance: without this, workers/* and snapshots/* grow by one per instance ever started.
// Bounded per tick (`batch` candidates) and idempotent; the ownership records are read only when there is
// a candidate, so a tick with nothing to delete costs two empty queries. A failure is logged and left to
// the next tick: it must never cost the pass that ran before it, and one worker that fails costs only itself.
// Given the tick's upkeep deadline (handler.ts UPKEEP_DEADLINE_MS), no worker's removal (nor the candidates'
// query) is begun past it: the workers left are the next tick's.
// Each worker's snapshot subscription goes much sooner, an hour after its session (subscription-retention.ts).
import {
  decideRetention,
  type RetentionDecision,
  retentionCutoff,
} from '../../../shared/src/domain/workers/retention.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { RetentionSweepResult, StoredFacts } from '../../../shared/src/ports/workers-retention.js';
import type { SnapshotPassDeps } from './deps.js';
import { retireWorkerSubscriptions } from './subscription-retention.js';

export interface RetireCounts {
  /** Workers of which something was deleted (the document, the header, or both). */
  retired: number;
  /**
   * Workers whose deletion failed or whose documents are out of shape (passed over), or 1 when the
   * candidates (or the owners) could not be read; plus 1 when the subscription retention failed.
   */
  failures: number;
}

type RetentionDeps = Pick<
  SnapshotPassDeps,
  'retired' | 'ownership' | 'clock' | 'log' | 'retention' | 'settings' | 'subscriptions'
>;

export async function retireOldWorkers(deps: RetentionDeps, deadline?: number): Promise<RetireCounts> {
  const subscriptions = deps.subscriptions
    ? await retireWorkerSubscriptions(deps, deps.subscriptions, deadline)
    : { failures: 0 };
  const documents = await retireDocuments(deps, deadline);
  return { retired: documents.retired, failures: documents.failures + subscriptions.failures };
}

async function retireDocuments(deps: RetentionDeps, deadline?: number): Promise<RetireCounts> {
  const now = deps.clock.now();
  const cutoff = retentionCutoff(now, deps.retention.afterMs);
  const outOfTime = () => deadline !== undefined && deps.clock.now().getTime() >= deadline;
  if (outOfTime()) {
    logDeadline(deps, 0, null);
    return { retired: 0, failures: 0 };
  }
  try {
    const { ids, invalid } = await deps.retired.candidates(cutoff, deps.retention.batch);
    // Passed over, not counted against the batch: a worker whose document or header was edited by hand
    // out of shape is neither deleted (nothing it says can be trusted) nor left to hold the batch. One
    // line a tick, worker ids and field paths only, until someone fixes or deletes the documents.
    if (invalid.length > 0) {
      deps.log.warn('workers past retention with documents out of shape passed over; fix or delete them', {
        event: 'gateway.workers_retention_invalid',
        workers: invalid,
      });
    }
    if (ids.length === 0) return { retired: 0, failures: invalid.length };
    // The listing may have run into the deadline: no ownership read begun past it either.
    if (outOfTime()) {
      logDeadline(deps, 0, ids.length);
      return { retired: 0, failures: invalid.length };
    }
    // Read after the candidates: a record naming one of them now was there before (a worker gone that
    // long is given nothing new; it would have to register, which the transaction sees).
    const state = await deps.ownership.read();
    const owners = new Set([...state.records.values()].map((r) => r.owner));
    const decide = (id: string, stored: StoredFacts) =>
      decideRetention({ ...stored, owns: owners.has(id) }, cutoff, state.epoch);
    // Given a deadline, one worker a call (as the store goes through them anyway); else the batch in one.
    const { removed, kept, failed, left } =
      deadline === undefined
        ? { ...(await deps.retired.remove(ids, cutoff, decide)), left: 0 }
        : await removeUntil(deps, ids, cutoff, decide, outOfTime);
    const gone = removed.filter((r) => r.worker || r.header);
    if (removed.length > 0) {
      deps.log.info('workers past retention deleted', {
        event: 'gateway.workers_retired',
        endedBefore: cutoff.toISOString(),
        epoch: state.epoch,
        workers: removed.map((r) => ({
          workerId: r.workerId,
          worker: r.worker,
          header: r.header,
          parts: r.parts,
          outcomeBatches: r.outcomeBatches,
        })),
      });
    }
    // A worker past retention that the planner still names, or whose header waits for the epoch to move:
    // expected now and then, worth a line when it lasts.
    const held = kept.filter((k) => k.reason === 'owns_proxies' || k.reason === 'epoch_unchanged');
    if (held.length > 0) deps.log.debug('workers past retention kept for now', { workers: held });
    for (const f of failed) {
      deps.log.warn('deleting one worker past retention failed; the next tick tries again', {
        workerId: f.workerId,
        kind: f.kind,
      });
    }
    if (left > 0) logDeadline(deps, gone.length, left);
    return { retired: gone.length, failures: failed.length + invalid.length };
  } catch (err) {
    deps.log.warn('worker retention failed; the next tick tries again', {
      kind: err instanceof WorkerStoreError ? err.kind : 'unknown',
      error: err,
    });
    return { retired: 0, failures: 1 };
  }
}

/** As the store's remove(), one worker a call, none begun once `outOfTime`: `left` counts those not begun. */
async function removeUntil(
  deps: RetentionDeps,
  ids: readonly string[],
  cutoff: Date,
  decide: (id: string, stored: StoredFacts) => RetentionDecision,
  outOfTime: () => boolean,
): Promise<RetentionSweepResult & { left: number }> {
  const out: RetentionSweepResult & { left: number } = { removed: [], kept: [], failed: [], left: 0 };
  for (const [i, id] of ids.entries()) {
    if (outOfTime()) {
      out.left = ids.length - i;
      break;
    }
    const one = await deps.retired.remove([id], cutoff, decide);
    out.removed.push(...one.removed);
    out.kept.push(...one.kept);
    out.failed.push(...one.failed);
  }
  return out;
}

/** Workers past retention left to the next tick by the upkeep deadline (null: not even listed). */
function logDeadline(deps: Pick<RetentionDeps, 'log'>, retired: number, left: number | null): void {
  deps.log.info('upkeep deadline reached: workers past retention left to the next tick', {
    event: 'gateway.upkeep_deadline_reached',
    step: 'worker_retention',
    retired,
    left,
  });
}
