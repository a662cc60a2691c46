// Subscription retention, run with the worker retention on the minute tick (retention.ts): the snapshot
// subscription of a worker whose session ended more than the view horizon ago (WORKER_VIEW_HORIZON_SECONDS,
// an hour) is deleted. Every subscription on gateway-snapshots is billed for every message published to
// the topic, those its filter drops included (https://cloud.google.com/pubsub/docs/filtering), and Cloud
// Run starts a worker id per instance: left to Pub/Sub's expiry (a day without a subscriber), each
// instance started that day multiplied the snapshot traffic, and a crash-looping gateway walked the topic
// toward its subscription quota, past which no worker could register. Past the horizon the pass no longer
// reads the worker and no grant of its can remain (settings.ts), so nothing more is published to it. A
// worker that does come back (a process cut off that long, a pinned GATEWAY_WORKER_ID) finds its pull
// NOT_FOUND and registers again, and registration makes the subscription again (snapshot-subscriptions.ts)
// — as it does when a registration lands just as its old session end is dealt with here and the
// subscription it was handed is deleted under it.
//
// Each session end is dealt with once: a cursor moves through the workers in order of session end, a page
// of `batch` at a time, never starting further back than Pub/Sub's expiry (a subscription idle that long is
// gone). A full page means a backlog: further pages follow in the same tick, up to SUBSCRIPTION_PAGES_PER_TICK
// of them and for SUBSCRIPTION_RETENTION_BUDGET_MS at most, and never past the tick's upkeep deadline
// (handler.ts UPKEEP_DEADLINE_MS: the pass ran first, and the whole tick shares the 120 s timeout). The
// cursor is saved past the last session end dealt with whichever of these stops the tick, so what was done
// is neither lost nor done again. One page a tick kept up with only
// `batch` (20) retired workers a minute: a gateway crash-looping at 30 new worker ids a minute left the cursor
// further behind every tick, then past the expiry, and ~14,000 subscriptions waited for Pub/Sub's expiry —
// over the topic's 10,000. A deletion that fails stops the tick there, and the next tries again from it.
import { WORKER_SUBSCRIPTION_EXPIRY_SECONDS } from '../../../shared/src/adapters/pubsub/worker-subscription.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { SessionEnd, SubscriptionReaper } from '../../../shared/src/ports/workers-retention.js';
import type { SnapshotPassDeps } from './deps.js';

/** Pages of `batch` session ends a tick takes at most while they come back full (a backlog). */
export const SUBSCRIPTION_PAGES_PER_TICK = 10;
/**
 * How long a tick keeps deleting subscriptions, by the injected clock: no page is started and no deletion
 * begun past it, nor past the tick's upkeep deadline, whichever comes first.
 */
export const SUBSCRIPTION_RETENTION_BUDGET_MS = 20_000;

export interface SubscriptionRetireCounts {
  /** Subscriptions deleted (those already gone not counted). */
  deleted: number;
  /** 1 when a deletion, the cursor or the ended sessions failed (the tick stops there), else 0. */
  failures: number;
}

export async function retireWorkerSubscriptions(
  deps: Pick<SnapshotPassDeps, 'retired' | 'clock' | 'log' | 'settings' | 'retention'>,
  reaper: SubscriptionReaper,
  /** Epoch ms by deps.clock: the tick's upkeep deadline (handler.ts); none: the budget alone. */
  deadline = Infinity,
): Promise<SubscriptionRetireCounts> {
  const now = deps.clock.now().getTime();
  const before = new Date(now - deps.settings.viewHorizonMs);
  const floor = new Date(now - WORKER_SUBSCRIPTION_EXPIRY_SECONDS * 1000);
  // A horizon longer than the expiry (it may be up to two days): Pub/Sub deletes them first.
  if (floor >= before) return { deleted: 0, failures: 0 };
  const pastDeadline = () => deps.clock.now().getTime() >= deadline;
  if (pastDeadline()) {
    logDeadline(deps, 0);
    return { deleted: 0, failures: 0 };
  }
  try {
    const cursor = await deps.retired.subscriptionCursor();
    let after: SessionEnd | Date = cursor && cursor.endedAt > floor ? cursor : floor;
    const deleted: string[] = [];
    let reached: SessionEnd | null = null;
    let failures = 0;
    // A later page that cannot be read still saves the cursor past what the earlier ones dealt with.
    let storeFailure: unknown = null;
    let stoppedAtDeadline = false;
    const outOfTime = () => {
      if (pastDeadline()) stoppedAtDeadline = true;
      return stoppedAtDeadline || deps.clock.now().getTime() - now >= SUBSCRIPTION_RETENTION_BUDGET_MS;
    };
    pages: for (let page = 0; page < SUBSCRIPTION_PAGES_PER_TICK && !outOfTime(); page++) {
      let ended: SessionEnd[];
      try {
        ended = await deps.retired.sessionsEnded(after, before, deps.retention.batch);
      } catch (err) {
        if (page === 0) throw err;
        storeFailure = err;
        break;
      }
      for (const s of ended) {
        if (outOfTime()) break pages;
        try {
          if (await reaper.remove(s.workerId)) deleted.push(s.workerId);
        } catch (err) {
          deps.log.warn('deleting a worker snapshot subscription failed; the next tick tries again', {
            workerId: s.workerId,
            error: err,
          });
          failures = 1;
          break pages;
        }
        reached = s;
        after = s;
      }
      // A page short of `batch`: nothing more has ended before the horizon.
      if (ended.length < deps.retention.batch) break;
    }
    if (deleted.length > 0) {
      deps.log.info('snapshot subscriptions of workers gone past the view horizon deleted', {
        event: 'gateway.worker_subscriptions_deleted',
        endedBefore: before.toISOString(),
        workers: deleted,
      });
    }
    if (reached) await deps.retired.saveSubscriptionCursor(reached);
    if (stoppedAtDeadline) logDeadline(deps, deleted.length);
    if (storeFailure !== null) {
      logStoreFailure(deps, storeFailure);
      failures = 1;
    }
    return { deleted: deleted.length, failures };
  } catch (err) {
    logStoreFailure(deps, err);
    return { deleted: 0, failures: 1 };
  }
}

function logDeadline(deps: Pick<SnapshotPassDeps, 'log'>, deleted: number): void {
  deps.log.info('upkeep deadline reached: worker snapshot subscriptions left to the next tick', {
    event: 'gateway.upkeep_deadline_reached',
    step: 'subscription_retention',
    deleted,
  });
}

function logStoreFailure(deps: Pick<SnapshotPassDeps, 'log'>, err: unknown): void {
  deps.log.warn('worker subscription retention failed; the next tick tries again', {
    kind: err instanceof WorkerStoreError ? err.kind : 'unknown',
    error: err,
  });
}
