// The snapshot function's handler: decode (a tick or a request, a field this version does not know dropped
// and named; anything else is poison, acknowledged and logged) → one pass. A busy planner is retried
// through Pub/Sub for a request (it may carry news the running pass has not seen). A failed worker step is
// retried within seconds — the worker would otherwise wait a whole tick for its snapshot, and after an
// epoch change that is past its session's TTL (its reports are refused stale_epoch until it has ACKed a
// snapshot of the new epoch): by redelivering the request when the step is its own (a request naming that
// worker, or one naming none: a step-retry, an admin change), else by asking for a pass (step-retry), as a
// tick does: a tick is never retried itself (that only piles passes up), and a request naming one worker is
// not redelivered for another's step (each redelivery a whole pass, up to ten of them). A step that fails
// the same way every time (step-failure.ts) is left to the next tick, and so is a request whose whole pass
// fails that way (a stored document out of shape). Once its pass has run, a request is
// retried for a worker session's TTL at most (by its publish time): past that a quicker pass no longer
// saves the worker's session. A tick's storage upkeep starts no unit of work past UPKEEP_DEADLINE_MS
// after the tick is decoded (after its run's claim): the pass may have used most of the timeout, and a tick cut off at it is redelivered
// (a whole pass and upkeep again, unrecorded).
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { logTickFailure } from '../../../shared/src/adapters/log/tick-failure.js';
import { logTickReceived } from '../../../shared/src/adapters/log/tick-received.js';
import {
  decodePubSubCloudEvent,
  logUnknownFields,
  poisonFields,
} from '../../../shared/src/adapters/pubsub/decode-push.js';
import {
  ReceivedSnapshotTopicPayload,
  SNAPSHOT_REQUESTS_TOPIC,
} from '../../../shared/src/messages/worker-snapshot-request.js';
import type { SnapshotRequester } from '../../../shared/src/ports/workers-snapshots.js';
import type { SnapshotPassDeps } from './deps.js';
import { SnapshotJob } from './job-run.js';
import { type PassSummary, PlannerBusy, runSnapshotPass } from './pass.js';
import { retireOldWorkers } from './retention.js';
import { permanentStepFailure, retriesOf } from './step-failure.js';
import { sweepOldSnapshots } from './sweep.js';

/**
 * How long after a tick is decoded — after its run's claim, itself given up at 10 s (tick-recording.ts) —
 * its upkeep may begin a unit of work (the parts sweep's batch, a worker's removal, a page or a deletion of
 * subscriptions): a subscription delete begun just before it (cut at 10 s) and the cursor's save (as long)
 * end before the run's record is given up, 2 s before the function's 120 s timeout
 * (test/terraform/code-contract.test.ts). It bounds what starts: a Firestore call has only the
 * client's deadlines, so a Firestore slow on every call can still reach the timeout. What is left is the
 * next tick's: upkeep is idempotent.
 */
export const UPKEEP_DEADLINE_MS = 80_000;

export type SnapshotOutcome = 'poison' | 'done' | 'busy_tick' | 'retry_given_up' | 'unservable';

export type SnapshotHandlerDeps = SnapshotPassDeps & {
  log: Logger;
  /** Where a tick whose worker steps failed asks for the pass again (snapshot-requests). */
  requester: SnapshotRequester;
};

/** The reason of the request a tick with failed steps publishes (free text: logged, never branched on). */
export const STEP_RETRY_REASON = 'step-retry';

/** A request's own worker steps failed: its pass ran, and Pub/Sub redelivers it for those steps. */
class OwnStepsFailed extends Error {
  constructor(
    own: readonly string[],
    /** Other workers whose steps failed in the same pass (retried by the redelivery's pass too). */
    readonly others: readonly string[],
  ) {
    super(`${own.length} worker snapshot step(s) failed (${own.join(', ')}); retrying the request`);
  }
}

export async function handleSnapshotEvent(
  deps: SnapshotHandlerDeps,
  event: unknown,
): Promise<{ outcome: SnapshotOutcome; summary?: PassSummary; upkeep?: UpkeepCounts }> {
  const decoded = decodePubSubCloudEvent(event, ReceivedSnapshotTopicPayload);
  if (!decoded.ok) {
    deps.log.error('malformed snapshot request acknowledged', poisonFields(decoded));
    return { outcome: 'poison' };
  }
  logUnknownFields(deps.log, decoded, SNAPSHOT_REQUESTS_TOPIC);
  const isTick = 'job' in decoded.value;
  const upkeepDeadline = deps.clock.now().getTime() + UPKEEP_DEADLINE_MS;
  const trigger = isTick ? { tick: (decoded.value as { job: string }).job } : decoded.value;
  if (isTick) logTickReceived(deps.log, SnapshotJob);
  try {
    const summary = await runSnapshotPass(deps);
    const { own, others } = retriesOf(
      summary.failed,
      isTick ? null : (decoded.value as { workerId?: string }),
    );
    // The others' steps ride on the redelivery (each a whole pass); asked for apart only if it is given up.
    if (own.length > 0) throw new OwnStepsFailed(own, others);
    if (others.length > 0) await requestRetry(deps, others, trigger);
    // Storage upkeep (old parts, then workers past retention) rides on the minute tick only: a worker's
    // request wants its snapshot, nothing else. After the retry request: upkeep's Pub/Sub admin calls
    // (a retired worker's subscription) must not hold back what the failed workers wait for.
    if (isTick) Object.assign(summary, await upkeep(deps, upkeepDeadline));
    return { outcome: 'done', summary };
  } catch (err) {
    if (isTick) {
      if (err instanceof PlannerBusy)
        deps.log.info('tick skipped: another pass is running', { trigger, error: err });
      else logTickFailure(deps.log, SnapshotJob, err, { trigger });
      // Upkeep needs neither the pass nor its lock (each deletion re-reads what it deletes): a pass that
      // fails every tick (a document edited out of shape) or finds the planner always busy (a gateway
      // crash-looping, each registration asking for a pass) must not also stop the cleanup — retired
      // workers' subscriptions pile up toward the topic's subscription quota.
      // Its counts are the run's: this is when retention failing must show (`retireFailures`).
      return { outcome: 'busy_tick', upkeep: await upkeep(deps, upkeepDeadline) };
    }
    if (permanentStepFailure(err)) {
      // The pass itself fails the same way on every delivery (a stored document out of shape: the ownership
      // state or a shard edited by hand, or the routing before any snapshot was stored to take the last
      // published one from — last-routing.ts): ten redeliveries would run ten passes for nothing and
      // dead-letter the request. Acknowledged; every tick tries again and logs it until it is fixed. No
      // grant is renewed meanwhile: every gateway stops serving once its snapshot goes stale (150 s).
      deps.log.error('snapshot request acknowledged unserved: the pass cannot run until this is fixed', {
        trigger,
        error: err,
      });
      return { outcome: 'unservable' };
    }
    const stepRetry = (trigger as { reason?: string }).reason === STEP_RETRY_REASON;
    // A step-retry carries no news, whatever failed; another request's news was seen once its pass ran.
    if ((stepRetry || err instanceof OwnStepsFailed) && outlivedSession(deps, decoded.publishTime)) {
      // Past the session TTL a quicker pass no longer saves the worker's session, and a step that keeps
      // failing (Pub/Sub unavailable, or refusing the worker's publishes while an unconfirmed one is in the
      // client's hands) would keep ~10 passes a minute running and dead-letter a request every tick: the
      // next tick tries again, and asks again.
      deps.log.warn(
        stepRetry
          ? 'step-retry request acknowledged unserved: the next tick runs the pass again'
          : 'snapshot request acknowledged with a step still failing: the next tick runs the pass again',
        { trigger, publishTime: decoded.publishTime, error: err },
      );
      // Other workers' steps that failed in this pass are newer than this request: asked for apart.
      if (err instanceof OwnStepsFailed && err.others.length > 0)
        await requestRetry(deps, err.others, trigger);
      return { outcome: 'retry_given_up' };
    }
    deps.log.warn('snapshot request will be retried', { trigger, error: err });
    throw err;
  }
}

export type UpkeepCounts = Pick<PassSummary, 'swept' | 'sweepFailures' | 'retired' | 'retireFailures'>;

/**
 * Old snapshot parts, then workers past retention and their subscriptions, none begun past `deadline`
 * (epoch ms by deps.clock); never throws (each logs).
 */
async function upkeep(deps: SnapshotHandlerDeps, deadline: number): Promise<UpkeepCounts> {
  const sweep = await sweepOldSnapshots(deps, deadline);
  const retired = await retireOldWorkers(deps, deadline);
  return {
    swept: sweep.swept,
    sweepFailures: sweep.failures,
    retired: retired.retired,
    retireFailures: retired.failures,
  };
}

/** A message published longer ago than a worker session lasts (false without a publish time). */
function outlivedSession(deps: SnapshotHandlerDeps, publishTime: string | undefined): boolean {
  if (publishTime === undefined) return false;
  const published = Date.parse(publishTime);
  return Number.isFinite(published) && deps.clock.now().getTime() - published >= deps.settings.sessionTtlMs;
}

/** Best effort, as the API's requests are: when the publish fails too, the next tick runs the pass. */
async function requestRetry(
  deps: SnapshotHandlerDeps,
  workerIds: readonly string[],
  trigger: unknown,
): Promise<void> {
  const failures = workerIds.length;
  try {
    await deps.requester.request({ reason: STEP_RETRY_REASON });
    deps.log.info('worker snapshot steps failed: a pass requested, retried for a worker session’s TTL', {
      trigger,
      failures,
      workerIds,
    });
  } catch (err) {
    deps.log.warn('worker snapshot steps failed and no pass could be requested; the next tick runs one', {
      trigger,
      failures,
      workerIds,
      error: err,
    });
  }
}
