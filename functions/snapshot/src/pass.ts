// One snapshot pass (docs/gateway-control-plane.md): observe → plan (pure) → if nothing is to change,
// stop with no write at all (a steady fleet costs reads only) → otherwise take the planner lock, observe
// and plan again under it, commit the ownership changes with the new epoch in one guarded batch, then
// store and publish each live worker's snapshot, and give the lock back. One planner at a time: the lock
// plus the commit's precondition on the state document.
import pLimit from 'p-limit';
import { loggedProxies } from '../../../shared/src/adapters/log/logged-proxies.js';
import { planPass } from '../../../shared/src/domain/snapshots/plan-pass.js';
import { failOpenRoutes } from '../../../shared/src/domain/snapshots/route-fail-open.js';
import { commitChunks, type OwnershipChange } from '../../../shared/src/domain/workers/ownership.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SnapshotPassDeps } from './deps.js';
import { observe } from './observe.js';
import { HeldLock } from './planner-lock.js';
import { type FailedStep, permanentStepFailure } from './step-failure.js';
import { actWorkerStep, decideWorkerStep, type StepResult } from './worker-steps.js';

export interface PassSummary {
  ran: boolean;
  busy: boolean;
  epoch: number;
  ownershipChanges: number;
  published: number;
  resent: number;
  failures: number;
  /** The workers whose step failed, each once (`failures` of them). */
  failed: FailedStep[];
  /** Snapshots whose old parts were swept after the pass (ticks only: sweep.ts). */
  swept: number;
  /** Old snapshots whose sweep failed this tick (left for the next one). */
  sweepFailures: number;
  /** Workers whose stored documents were deleted past retention (ticks only: retention.ts). */
  retired: number;
  /** Workers whose deletion failed this tick, or 1 when none could be listed (left for the next one). */
  retireFailures: number;
  workers: StepResult[];
}

export class PlannerBusy extends Error {
  readonly kind = 'busy';
}

async function decide(deps: SnapshotPassDeps) {
  const now = deps.clock.now();
  const obs = await observe(deps, now);
  const plan = planPass(obs.input);
  // Over the proxies some worker's snapshot carries this pass: a reachable pool proxy that no snapshot
  // carries (reclaimed for a lease, draining, owned by a worker whose grant has not lapsed) is no way out.
  const failedOpen = failOpenRoutes(
    obs.routing,
    plan.builds.flatMap((b) => b.owned),
  );
  const steps = plan.builds.map((build) => {
    const ctx = {
      epoch: plan.ownership.epoch,
      routing: obs.routing,
      failOpenRoutes: failedOpen,
      now,
      header: obs.headers.get(build.workerId) ?? null,
      ackedVersion: obs.input.workers.get(build.workerId)?.session.ackedVersion ?? null,
      boundFrom: obs.input.workers.get(build.workerId)?.session.boundFrom ?? null,
    };
    return { step: decideWorkerStep(deps, build, ctx), ctx };
  });
  return { obs, plan, steps, failedOpen };
}

/** Lease grants racing an assignment: re-planned at once this many times before the pass gives up. */
const LEASE_RACE_REPLANS = 2;

/**
 * Workers whose step (a snapshot transaction, a publish, a header patch: a few round trips each) runs at
 * once. One at a time, an epoch bump over 100 workers took 100 × those round trips (~150 ms each in one
 * region: ~15 s) before the last worker heard of it; eight at once keep the latencies from adding up,
 * and bound what one pass holds in flight.
 */
export const ACT_CONCURRENCY = 8;

/**
 * Assignments per ownership commit. Each claims its proxy's lease state (one write), and the changed shards
 * (≤ 16) and the state document ride along: Firestore refuses a commit of more than 500 writes, and one
 * commit of a whole pool assigned at once would be refused on every retry and every tick.
 */
export const MAX_ASSIGNMENTS_PER_COMMIT = 400;

/**
 * Under the lock: observe, plan and commit the ownership changes — in commits of at most
 * MAX_ASSIGNMENTS_PER_COMMIT assignments, each guarded by the version the previous one left, the epoch
 * moved by the last one only (OwnershipStore.commit holdEpoch). A re-plan after a lost race, or the next
 * pass after a crash between commits, plans the rest at that same epoch: the state still has the one
 * before — and commits that epoch even when no change is left (planPass: heldEpoch). An assignment
 * is preconditioned on the lease state read for it (OwnershipStore.commit), so a lease granted between that
 * read and the commit fails that commit; the state document is then as this pass last left it, so the pass
 * observes again — the new lease keeps that proxy back, what was committed stays — and commits the rest.
 */
async function decideAndCommit(
  deps: SnapshotPassDeps,
  token: string,
  committed: (version: string, changes: readonly OwnershipChange[]) => void,
): Promise<Awaited<ReturnType<typeof decide>>> {
  let expected = token;
  for (let replans = 0; ; replans++) {
    const decided = await decide(deps);
    const { plan, obs } = decided;
    // The planner's state moved on: the lock lapsed and another pass took it. Not a lease race: give up.
    if (replans > 0 && obs.token !== expected)
      throw new WorkerStoreError('conflict', 'the planner lock was lost during the pass');
    // Nothing to commit: no change, and no epoch left held by an earlier pass's or attempt's chunks.
    if (plan.ownership.epoch === obs.input.epoch) return decided;
    try {
      // With no change left, the held epoch alone: one commit of nothing but the state document.
      const chunks =
        plan.ownership.changes.length > 0
          ? commitChunks(plan.ownership.changes, MAX_ASSIGNMENTS_PER_COMMIT)
          : [[]];
      for (const [i, chunk] of chunks.entries()) {
        expected = await deps.ownership.commit(
          chunk,
          plan.ownership.epoch,
          expected,
          deps.clock.now(),
          obs.leaseVersions,
          { holdEpoch: i < chunks.length - 1 },
        );
        committed(expected, chunk);
      }
      return decided;
    } catch (err) {
      if (!(err instanceof WorkerStoreError && err.kind === 'conflict') || replans >= LEASE_RACE_REPLANS)
        throw err;
      deps.log.info('ownership commit lost a race (a lease granted meanwhile?): planning again', {
        event: 'gateway.ownership_replanned',
        error: err,
      });
    }
  }
}

/** Throws PlannerBusy when another pass holds the lock and this one has something to do. */
export async function runSnapshotPass(deps: SnapshotPassDeps): Promise<PassSummary> {
  const dry = await decide(deps);
  const summary: PassSummary = {
    ran: false,
    busy: false,
    epoch: dry.plan.ownership.epoch,
    ownershipChanges: 0,
    published: 0,
    resent: 0,
    failures: 0,
    failed: [],
    swept: 0,
    sweepFailures: 0,
    retired: 0,
    retireFailures: 0,
    workers: [],
  };
  if (dry.obs.skipped.length > 0) {
    // Every pass (every minute) while they stay broken: the count and the first names, never the whole list.
    deps.log.warn(
      'gateway-pool proxies skipped: their documents do not fit the model',
      loggedProxies(dry.obs.skipped),
    );
  }
  if (dry.obs.routingDropped.length > 0) {
    deps.log.error('stored gateway routing repeats route names: later duplicates dropped; PUT a fixed one', {
      event: 'gateway.routing_invalid',
      dropped: dry.obs.routingDropped,
    });
  }
  if (dry.obs.routingInvalid) {
    // Every pass says so until the document is fixed: a routing change the admin meant is not applied.
    deps.log.error(
      'stored gateway routing no longer fits the route schema: planning with the routing last published; PUT a fixed one',
      {
        event: 'gateway.routing_invalid',
        snapshot: dry.obs.routingInvalid.snapshot,
        error: dry.obs.routingInvalid.error,
      },
    );
  }
  for (const o of dry.plan.overdue) {
    // Once per pass, from its first plan (as the warnings above): the locked plan and re-plans say no more.
    // withheld: given no proxies, its grant not renewed; else no worker takes snapshots, nothing moves.
    deps.log.warn('gateway worker owes a snapshot ACK past max_stale_age', {
      event: 'gateway.worker_ack_overdue',
      workerId: o.workerId,
      owedVersion: o.version,
      owedSince: o.since.toISOString(),
      withheld: o.withheld,
    });
  }
  if (dry.failedOpen.length > 0) {
    deps.log.warn('target check fails through every pool proxy of a route: none excluded from it', {
      event: 'gateway.route_failed_open',
      routes: dry.failedOpen,
    });
  }
  const { cap } = dry.plan;
  if (cap.capped.length > 0) {
    // The pool outgrows the workers: what a full worker cannot keep goes to one with room, or to nobody.
    deps.log.warn('gateway workers given more proxies than a snapshot may carry: their shares capped', {
      event: 'gateway.worker_share_capped',
      cap: cap.cap,
      workers: cap.capped,
      moved: cap.moved,
      unassigned: cap.unassigned,
    });
  }
  if (dry.plan.drainsHeld > 0) {
    // A worker joining beside one owning more than twice what a report carries: the moves start in batches.
    deps.log.info('gateway moves held back: their owners already drain as many proxies as a report carries', {
      event: 'gateway.drains_held',
      held: dry.plan.drainsHeld,
    });
  }
  if (dry.plan.ownership.epoch === dry.obs.input.epoch && dry.steps.every((s) => s.step.kind === 'none'))
    return summary;

  const holder = deps.newHolder();
  const lockedAt = deps.clock.now();
  const token = await deps.ownership.acquireLock(
    holder,
    lockedAt,
    new Date(lockedAt.getTime() + deps.lockMs),
  );
  if (!token) throw new PlannerBusy('another snapshot pass holds the planner lock');
  const lock = new HeldLock(deps, holder, token, lockedAt);
  try {
    // Every change committed, a re-plan's included: commits before a lease race stay committed.
    const changed: OwnershipChange[] = [];
    const { plan, steps } = await lock.exclusive(() =>
      decideAndCommit(deps, token, (version, chunk) => {
        lock.token = version;
        changed.push(...chunk);
      }),
    );
    summary.ran = true;
    summary.epoch = plan.ownership.epoch;
    if (changed.length > 0) {
      summary.ownershipChanges = changed.length;
      const count = (k: string) => changed.filter((c) => c.kind === k).length;
      deps.log.info('ownership planned', {
        event: 'gateway.ownership_planned',
        epoch: plan.ownership.epoch,
        assigned: count('assigned'),
        drainStarted: count('drain_started'),
        drainCancelled: count('drain_cancelled'),
        released: count('released'),
      });
    }
    // Each worker's step is its own store → publish → mark, independent of the others' (the ownership they
    // carry is committed above), so several run at once: after an epoch bump every live worker has one.
    const results = await pLimit(ACT_CONCURRENCY).map(steps, async ({ step, ctx }) => {
      // The lock could not be extended (planner-lock.ts): what is left is failed, and asked for again.
      if (lock.lost) {
        summary.failures++;
        summary.failed.push({ workerId: step.build.workerId, permanent: false });
        return null;
      }
      try {
        return await actWorkerStep(deps, step, { ...ctx, epoch: plan.ownership.epoch, lockHolder: holder });
      } catch (err) {
        // One worker's failure must not starve the others; the pass is retried (or the next tick redoes it).
        const permanent = permanentStepFailure(err);
        summary.failures++;
        summary.failed.push({ workerId: step.build.workerId, permanent });
        deps.log.error('snapshot step failed', {
          workerId: step.build.workerId,
          step: step.kind,
          permanent,
          error: err,
        });
        return null;
      }
    });
    for (const r of results) {
      if (r === null) continue;
      summary.workers.push(r);
      if (r.kind === 'publish') summary.published++;
      if (r.kind === 'resend') summary.resent++;
    }
  } finally {
    await lock.release();
  }
  deps.log.info('snapshot pass', {
    event: 'gateway.snapshot_pass',
    ...summary,
    workers: summary.workers.length,
  });
  return summary;
}
