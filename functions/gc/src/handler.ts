// The gc function's handler (seed §8, the crash-safety net): claim the tick (a duplicate delivery does
// nothing), read the live UID set — and skip the whole sweep if that read fails, never guess — then sweep
// each provider in turn and record the run's counts (issue 11 shows them). A sweep never throws for what
// it expects: the next tick is the retry. A duplicate delivered at once finds the run claimed; a
// redelivery after a run that threw comes past the gap (the topic's backoff is 30 s) and sweeps again.
import { RECORD_MARGIN_MS, withDeadlineAt } from '../../../shared/src/adapters/deadline.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { loggedTick, logTickFailure } from '../../../shared/src/adapters/log/tick-failure.js';
import { logTickReceived } from '../../../shared/src/adapters/log/tick-received.js';
import {
  decodePubSubCloudEvent,
  logUnknownFields,
  poisonFields,
} from '../../../shared/src/adapters/pubsub/decode-push.js';
import { sweepRefusal } from '../../../shared/src/domain/gc/orphans.js';
import { ReceivedTick } from '../../../shared/src/messages/tick.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import type { ProviderRegistry } from '../../../shared/src/ports/provider.js';
import type { LiveUids, ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import { deleteOrphans, listProvider, orphanFields } from './sweep.js';

/** The job name of the Scheduler table (shared/topology/schedules.json) and of the jobRuns document. */
export const GcJob = 'gc-sweep';

export interface GcDeps {
  proxies: Pick<ProxyStore, 'liveUids' | 'recordsInstance'>;
  providers: ProviderRegistry;
  jobs: JobRunStore;
  clock: Clock;
  log: Logger;
  minAgeMs: number;
  minRunGapMs: number;
  /** More orphans than this at once smells of a wrong live set: the sweep then deletes none of them. */
  maxDeletions: number;
  /**
   * How long after its start the sweep is done with its orphans (GC_RUN_DEADLINE_MS deployed): each orphan's
   * lookup and delete are waited on only until then, and none is begun with less than ORPHAN_MIN_LEFT_MS
   * left (sweep.ts). Measured from the start, as the function's timeout is, however long the listing took.
   * Unset: no bound.
   */
  runDeadlineMs?: number;
  /**
   * How long after its start a listing still begins another page (GC_LIST_BUDGET_MS: the timeout less one
   * page's worst case). The claim and the live set read before any listing are waited on only until then
   * too. Unset: no bound.
   */
  listBudgetMs?: number;
  /**
   * The function's timeout (GC_TIMEOUT_MS deployed), measured from the sweep's start: the run's record is
   * waited on only until RECORD_MARGIN_MS before it, so that a Firestore that does not answer cannot keep
   * the sweep into the timeout. Unset: no bound.
   */
  timeoutMs?: number;
}

/** The gc function's timeout (shared/topology/functions.json; test/terraform/code-contract.test.ts holds
 *  them equal): the deadlines below are measured against it. */
export const GC_TIMEOUT_MS = 300_000;

/** GcDeps.runDeadlineMs deployed: the timeout less a margin to record the run (one Firestore write) and log
 *  its end. An orphan still waited on then is given up (a Compute API that does not answer), never the run:
 *  a sweep the timeout cuts off records nothing and logs no failure. */
export const GC_RUN_DEADLINE_MS = GC_TIMEOUT_MS - 15_000;

/** GcDeps.listBudgetMs deployed: a page begun by then ends, at its worst under a slow Compute API (four
 *  attempts unanswered for 30 s, ~128 s), before GC_RUN_DEADLINE_MS. A fleet whose pages take minutes
 *  leaves its orphans the rest: each takes a second or two on a healthy API. */
export const GC_LIST_BUDGET_MS = 150_000;

export interface GcCounts {
  instancesDeleted: number;
  instancesKept: number;
  instancesDeferred: number;
  deleteFailures: number;
  providersFailed: number;
  zonesUnreachable: number;
}

export type GcOutcome =
  | { kind: 'duplicate' }
  | { kind: 'skipped'; reason: 'claim_failed' | 'live_set_unreadable' }
  | { kind: 'swept'; counts: GcCounts };

const zero = (): GcCounts => ({
  instancesDeleted: 0,
  instancesKept: 0,
  instancesDeferred: 0,
  deleteFailures: 0,
  providersFailed: 0,
  zonesUnreachable: 0,
});

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The function's event: a malformed tick is poison (acknowledged and logged, never retried forever). The
 * tick handles every failure it expects; one it does not (a bug) logs `job.tick_failed` and fails the
 * invocation, so Pub/Sub redelivers.
 */
export async function onGcEvent(deps: GcDeps, ce: unknown): Promise<void> {
  const tick = decodePubSubCloudEvent(ce, ReceivedTick);
  if (!tick.ok) {
    deps.log.error('malformed tick acknowledged', poisonFields(tick));
    return;
  }
  logUnknownFields(deps.log, tick, 'ticks-gc');
  logTickReceived(deps.log, GcJob);
  await loggedTick(deps.log, GcJob, () => handleGcTick(deps));
}

export async function handleGcTick(deps: GcDeps): Promise<GcOutcome> {
  const { log, jobs, clock } = deps;
  const startedAt = clock.now();
  // The claim (a transaction: up to three attempts) and the live set (a query) are Firestore's: each can be
  // retried by its client for minutes when Firestore is degraded. They are waited on only until the listing
  // budget is spent — no listing is begun after it anyway — so that a stall ends the sweep as a failed
  // tick, logged and recorded, far inside the timeout instead of being cut off by it with nothing logged.
  const withinListBudget = <T>(work: Promise<T>): Promise<T> => {
    if (deps.listBudgetMs === undefined) return work;
    return withDeadlineAt(
      work,
      startedAt.getTime() + deps.listBudgetMs,
      clock,
      (ms) => new Error(`no answer within the ${ms} ms the listing budget had left`),
    );
  };
  try {
    if (!(await withinListBudget(jobs.claim(GcJob, startedAt, deps.minRunGapMs)))) {
      log.info('gc tick skipped: a sweep started moments ago (duplicate delivery)', {});
      return { kind: 'duplicate' };
    }
  } catch (err) {
    // A failed tick (job.tick_failed, as logTickFailure writes it, counted by the failing_jobs alert),
    // under the line's own message: the sweep did not run.
    log.error('gc sweep skipped: the run could not be claimed', {
      event: 'job.tick_failed',
      job: GcJob,
      error: message(err),
    });
    return { kind: 'skipped', reason: 'claim_failed' };
  }

  // Ages are measured against the moment the live set was read (classifyInstances explains why).
  const now = clock.now();
  let live: LiveUids;
  try {
    live = await withinListBudget(deps.proxies.liveUids());
  } catch (err) {
    log.error('gc sweep skipped: the live proxy list could not be read (never guess)', {
      event: 'job.tick_failed',
      job: GcJob,
      error: message(err),
    });
    await record(deps, startedAt, {
      ok: false,
      counts: zero(),
      error: `live set unreadable: ${message(err)}`,
    });
    return { kind: 'skipped', reason: 'live_set_unreadable' };
  }

  const counts = zero();
  // A large fleet's pages under a slow Compute API (each up to ~2 min of retries) would otherwise take the
  // sweep past the function's timeout, recording nothing.
  const listOutOfTime = () =>
    deps.listBudgetMs !== undefined && clock.now().getTime() - startedAt.getTime() >= deps.listBudgetMs;
  // The orphans have whatever the listing left of the timeout, not a fixed share from the start: a fleet
  // listed in over 40 s deleted none of them, every sweep.
  const deadline = deps.runDeadlineMs === undefined ? Infinity : startedAt.getTime() + deps.runDeadlineMs;
  const timeLeft = () => deadline - clock.now().getTime();
  const names = [...deps.providers.keys()].sort();
  const listings = [];
  for (const name of names)
    listings.push(
      await listProvider(
        deps.providers.get(name)!,
        live.uids,
        { now, minAgeMs: deps.minAgeMs, stopListing: listOutOfTime },
        log,
      ),
    );
  // Every provider's orphans are counted before any is deleted: past the bounds, none is. What the listing
  // missed is the domain's to weigh against the live set: live instances there were not counted, but only
  // managed live proxies whose instance it did not see can have one there (sweepRefusal).
  const unseen = listings.flatMap(({ provider, result: r }) =>
    r.listed ? r.unreachable.map((zone) => `${provider.name} zone ${zone}`) : [`provider ${provider.name}`],
  );
  const hold = sweepRefusal(
    listings.flatMap((l) => l.verdicts),
    deps.maxDeletions,
    live,
    unseen,
  );
  if (hold) {
    const orphans = listings.flatMap((l) =>
      l.verdicts.flatMap((v) => (v.delete ? [orphanFields(l.provider.name, v)] : [])),
    );
    for (const l of listings) l.result.deferred = l.verdicts.filter((v) => v.delete).length;
    const fields = {
      reason: hold.reason,
      liveProxies: live.uids.size,
      orphans: orphans.length,
      first: orphans.slice(0, 20),
    };
    if (hold.kind === 'refused')
      log.error('gc deleted nothing: too many orphans at once for a crash (the live set may be wrong)', {
        event: 'gc.refused',
        ...fields,
      });
    // Not a refusal: the live instances in what the listing missed were not counted, and the live set has
    // enough proxies unseen to outnumber the orphans. The orphans wait for a sweep that lists everything;
    // the unreachable zones or unlisted providers fail the tick themselves.
    else
      log.warn(
        'gc deleted nothing this sweep: its listing was incomplete; the orphans wait for a complete one',
        {
          event: 'gc.deferred',
          unseen,
          ...fields,
        },
      );
  } else {
    const recorded = (providerId: string) => deps.proxies.recordsInstance(providerId);
    for (const l of listings) await deleteOrphans(l, log, recorded, timeLeft);
  }
  let unattempted = 0;
  for (const { result: r } of listings) {
    unattempted += r.outOfTime;
    counts.instancesDeleted += r.deleted;
    counts.instancesKept += r.kept;
    counts.instancesDeferred += r.deferred;
    counts.deleteFailures += r.deleteFailures;
    counts.zonesUnreachable += r.unreachable.length;
    if (!r.listed) counts.providersFailed++;
  }

  // Every count here is work left for the next sweep; an unreachable zone's orphans were not even seen.
  const failed =
    counts.providersFailed + counts.deleteFailures + counts.instancesDeferred + counts.zonesUnreachable > 0;
  const detail = `${counts.providersFailed} provider(s) unlisted, ${counts.zonesUnreachable} zone(s) unreachable, ${counts.deleteFailures} orphan(s) failed (delete or lookup), ${counts.instancesDeferred} deferred${unattempted > 0 ? ` (${unattempted} not attempted: out of time)` : ''}`;
  const error = hold ? `${hold.kind}: ${hold.reason}; ${detail}` : failed ? detail : null;
  log.info('gc sweep finished', { liveProxies: live.uids.size, providers: names, ...counts });
  // Orphans left unseen or undeleted by an error make the tick a failed one (job.tick_failed: a provider
  // that keeps refusing its listing or its deletes pages through failing_jobs), and so does a refused
  // sweep: every sweep after it refuses too, until someone looks. A deferred one fails through the zones or
  // providers its listing missed, not for its orphans. An orphan still being created does not: the next
  // sweep deletes it.
  // A sweep out of time too: what slows it (Compute) goes on, and so would the orphans.
  // Logged before the record: a Firestore that fails the sweep's lookups may not answer its record either.
  if (
    hold?.kind === 'refused' ||
    counts.providersFailed + counts.deleteFailures + counts.zonesUnreachable + unattempted > 0
  )
    logTickFailure(log, GcJob, error);
  await record(deps, startedAt, { ok: !failed, counts, error });
  return { kind: 'swept', counts };
}

/**
 * The run's record (one Firestore write, up to a minute of the client's retries), waited on until
 * RECORD_MARGIN_MS before the timeout (GcDeps.timeoutMs): the sweep then ends on its own, never cut off
 * by the timeout. A write given up runs on, and may still land.
 */
async function record(
  deps: GcDeps,
  startedAt: Date,
  run: { ok: boolean; counts: GcCounts; error: string | null },
): Promise<void> {
  try {
    const finishing = deps.jobs.finish(GcJob, {
      startedAt,
      finishedAt: deps.clock.now(),
      ...run,
      counts: { ...run.counts },
    });
    if (deps.timeoutMs === undefined) await finishing;
    else
      await withDeadlineAt(
        finishing,
        startedAt.getTime() + deps.timeoutMs - RECORD_MARGIN_MS,
        deps.clock,
        (ms) => new Error(`no answer within the ${ms} ms the sweep had left`),
      );
  } catch (err) {
    // The sweep itself is done; only its record is missing (the next run overwrites it anyway).
    deps.log.error('gc could not record the run', { error: err });
  }
}
