// The probe function's handler: claim the tick (a duplicate delivery does nothing), follow the fleet (a
// listener: each pass sees it as it is then), prune the state of proxies gone from its first view, run
// passes over the windows since the previous run until the invocation's budget is spent, record the run.
import { boundedRuns } from '../../../shared/src/adapters/bounded-job-runs.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { loggedProxies } from '../../../shared/src/adapters/log/logged-proxies.js';
import { logTickFailure, messageOf } from '../../../shared/src/adapters/log/tick-failure.js';
import { nextSlotAfter } from '../../../shared/src/domain/health/due.js';
import { firstWindowStart } from '../../../shared/src/domain/health/probe-window.js';
import type { ProxyResource } from '../../../shared/src/domain/proxy.js';
import type { RoutingRule } from '../../../shared/src/messages/gateway-snapshot.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { JobRunStore } from '../../../shared/src/ports/job-runs.js';
import type { ProxyView, ProxyWatcher } from '../../../shared/src/ports/proxy-store.js';
import { WorkerStoreError } from '../../../shared/src/ports/workers.js';
import type { RoutingStore } from '../../../shared/src/ports/workers-ownership.js';
import { CheckSpacing } from './check-spacing.js';
import { runPassivePass } from './passive-pass.js';
import {
  type PassCounts,
  type ProbeDeps,
  type ProbeLog,
  probeable,
  pruneHealth,
  runProbePass,
} from './probe-pass.js';

export const ProbeJob = 'probe-tick';

export interface ProbeHandlerDeps extends ProbeDeps {
  /**
   * The fleet, followed for the run: a loop of up to ~105 s on its first listing dialled, with the proxy's
   * credentials, an address reconcile had withdrawn meanwhile (an instance seen stopped: GCE may hand its
   * ephemeral address to another project's VM), and probed proxies whose deletion had been requested.
   */
  proxies: ProxyWatcher;
  /** The passes' log, and the tick's: a failed part of it is an ERROR line (job.tick_failed). */
  log: ProbeLog & Pick<Logger, 'error'>;
  /** The stored gateway routing: its routes' target checks are the TARGET tier (docs/health.md). */
  routing: Pick<RoutingStore, 'get'>;
  /**
   * The run's record. Its claim is waited for CLAIM_TIMEOUT_MS, and given up fails the tick (logged
   * job.tick_failed; Pub/Sub redelivers); its finish until RECORD_MARGIN_MS before `timeoutMs`
   * (boundedRuns): a Firestore that does not answer must not hold the tick until the function's timeout
   * cuts it off, with nothing recorded or logged.
   */
  jobs: JobRunStore;
  /** The function's timeout (shared/topology/functions.json): bounds the run's record. Unset: no bound. */
  timeoutMs?: number;
  clock: Clock;
  sleep(ms: number): Promise<void>;
  /** The Scheduler period: a second delivery within half of it is a duplicate. */
  tickPeriodMs: number;
  /** Keep probing due proxies inside one invocation for this long (sub-minute intervals deployed); 0 = one pass. */
  loopMs: number;
  /**
   * How long after its start a run may wait for probe decisions (the function's timeout less the time its
   * last writes need): a pass still waiting then stores what it has (runProbePass's budget).
   */
  runBudgetMs?: number;
}

/**
 * The least a pass is given: the first pass of a run even when what came before it (the passive pass) spent
 * the run's budget. A later pass with less than this left does not start — begun anyway, its probes, writes
 * and publishes ran past the budget into the function's timeout, which kills the run before it records its
 * end. The run records where the slots it left start (nextWindowStart), which the next run takes up only
 * if it claims after this run finished; with the deployed budget (the budget is spent 105 s or more into the
 * run, after the next tick's claim) they wait for their next interval (docs/health.md).
 */
export const MIN_PASS_BUDGET_MS = 5_000;

/** Skipped documents named per line, each with its failing field paths: the count says how many more. */
const LOGGED_SKIPPED = 20;

export interface ProbeRunSummary extends PassCounts {
  passes: number;
  pruned: number;
  /** Gateway outcome batches consumed for the PASSIVE track, and the signals they made. */
  outcomeBatches: number;
  passiveSignals: number;
}

export async function handleProbeTick(deps: ProbeHandlerDeps): Promise<ProbeRunSummary | null> {
  const startedAt = deps.clock.now();
  const jobs = boundedRuns(deps.jobs, deps.clock, deps.timeoutMs);
  const deadline = startedAt.getTime() + deps.loopMs;
  // The deadline goes into the record: the next run starts where it is (firstWindowStart), whatever loop
  // that run's deployment has.
  // Every failure it records it throws (below): a delivery after one is Pub/Sub's retry (retryAfterFailure).
  const claim = await jobs.claim(ProbeJob, startedAt, deps.tickPeriodMs / 2, new Date(deadline), true);
  if (!claim) {
    deps.log.info('probe tick skipped: a run started moments ago (duplicate delivery)', {});
    return null;
  }
  // Decided before anything can fail, so that a failed run records it too: the next run probes again from
  // where this run's stored passes end (a failed run may have probed without storing), docs/health.md.
  const windowStart = firstWindowStart(claim.previous, startedAt, deps);
  /** Where the first window not yet stored starts: a pass's decisions are stored when it returns. */
  let from = windowStart;
  const summary: ProbeRunSummary = {
    proxies: 0,
    probed: 0,
    written: 0,
    transitions: 0,
    passes: 0,
    pruned: 0,
    outcomeBatches: 0,
    passiveSignals: 0,
  };
  // Followed for the run, and stopped at its end however it ends.
  let fleet: ProxyView | undefined;
  /** How the passes ended, when none threw: the passive pass's error, where the slots left start. */
  let ended: { passiveError: string | null; leftFrom: Date | null };
  try {
    fleet = await deps.proxies.watchAll();
    const { proxies: all, skipped } = fleet.current();
    summary.proxies = all.length;
    if (skipped.length > 0) {
      // Not probed (nothing in such a document can be trusted to say where the proxy is), and said so on
      // every run until the document is repaired or deleted.
      const logged = loggedProxies(skipped, LOGGED_SKIPPED);
      deps.log.warn('proxy documents that do not fit the model were skipped', {
        event: 'probe.invalid_documents_skipped',
        ...logged,
        proxies: logged.proxies.map((s) => ({ name: s.name, fields: s.issues.map((i) => i.path) })),
      });
    }
    // Right after the listing, while it is current: a run that overlaps this one (the next tick's, while
    // this one's last pass runs long) may store the state of a proxy created since this listing, and a
    // prune at the end of this run would delete it as gone. A skipped document is not gone: its health
    // state is kept for when it is repaired.
    const live = new Set([...all, ...skipped].map((p) => p.name));
    summary.pruned = await pruneHealth(deps, live);
    // A proxy published in one pass may still show its old status to the later passes (reconcile has not
    // written yet): it is not published again this run.
    const sent = new Set<string>();
    // Gateway evidence first, so that this tick's active passes read (and may expire) the updated tracks.
    const passiveError = await consumeOutcomes(deps, all, startedAt, summary, sent);
    const routes = await readRoutes(deps);
    /** Where the slots left to the next run start, when the budget ended the loop before the deadline. */
    let leftFrom: Date | null = null;
    const leaveToNextRun = () => {
      leftFrom = from;
      deps.log.warn(
        'probe run out of budget before its deadline: the slots left wait for their next interval',
        {
          event: 'probe.run_budget_spent',
          from: from.toISOString(),
          deadline: new Date(deadline).toISOString(),
        },
      );
    };
    /** This run's checks, so that a late pass does not check a proxy again moments apart (check-spacing.ts). */
    const spacing = new CheckSpacing();
    // Where the next run takes up (its first window from this deadline), when it is due, and — runs that do
    // not chain — the end of what it checks.
    const nextAt = startedAt.getTime() + deps.tickPeriodMs;
    const next = {
      from: new Date(deadline),
      at: new Date(nextAt),
      ...(deps.loopMs < deps.tickPeriodMs ? { until: new Date(nextAt + deps.loopMs) } : {}),
    };
    for (;;) {
      // Never past the deadline: the next run starts there (firstWindowStart), so a pass that began late —
      // its slot was due before the deadline, but the pass before it ran into timeouts — would otherwise
      // probe the slots between the deadline and now, and the next run probe them again seconds later
      // (a dead proxy's failures counted twice as fast as its interval says). They are the next run's.
      const now = deps.clock.now();
      const to = new Date(Math.min(now.getTime(), deadline));
      // A window still covered by a previous run that is still looping starts in the future: wait for it.
      if (to > from) {
        const left =
          deps.runBudgetMs === undefined
            ? undefined
            : startedAt.getTime() + deps.runBudgetMs - deps.clock.now().getTime();
        if (left !== undefined && left < MIN_PASS_BUDGET_MS && summary.passes > 0) {
          leaveToNextRun();
          break;
        }
        const budget = left === undefined ? undefined : Math.max(MIN_PASS_BUDGET_MS, left);
        const checked = spacing.eligible(current(fleet), now, next);
        const c = await runProbePass(deps, checked, from, to, sent, routes, budget);
        summary.passes++;
        // Its budget spent before it read the health states: it decided nothing, and its slots are the
        // next run's, as a pass that does not start.
        if (c === null) {
          leaveToNextRun();
          break;
        }
        spacing.record(checked, from, to, now);
        summary.probed += c.probed;
        summary.written += c.written;
        summary.transitions += c.transitions;
        from = to;
      }
      const wakeAt = earliestSlot(current(fleet), from);
      if (wakeAt === null || wakeAt.getTime() > deadline) break;
      await deps.sleep(Math.max(0, wakeAt.getTime() - deps.clock.now().getTime()));
    }
    ended = { passiveError, leftFrom };
  } catch (err) {
    try {
      await jobs.finish(ProbeJob, {
        startedAt,
        finishedAt: deps.clock.now(),
        ok: false,
        counts: { ...summary },
        error: messageOf(err),
        // Not where its first window started: the passes it stored are counted already, and probed again
        // they were counted twice (a failing proxy at its threshold an interval early).
        windowStart: from,
      });
    } catch (recordErr) {
      // Likely when Firestore is what failed the run: the run's own error is still the one thrown, and
      // logged as the failed tick (job.tick_failed). The record stays as claimed (ok null): a redelivery
      // within the claim's gap (half a period from this run's start) is refused as a duplicate.
      deps.log.warn('probe run not recorded', { error: messageOf(recordErr), run: messageOf(err) });
    }
    throw err;
  } finally {
    fleet?.stop();
  }
  // Past the try: a record that fails (given up RECORD_MARGIN_MS before the timeout, boundedRuns) fails the
  // tick, and is not tried again as a failed run's with nothing of the invocation left.
  const { passiveError, leftFrom } = ended;
  await jobs.finish(ProbeJob, {
    startedAt,
    finishedAt: deps.clock.now(),
    ok: true,
    counts: { ...summary },
    // The active tiers ran: the run is ok, and says what of it failed.
    error: passiveError === null ? null : `passive pass: ${passiveError || 'failed'}`,
    windowStart,
    nextWindowStart: leftFrom,
  });
  // One failed-tick line per tick: a run that throws later logs its own (loggedTick), not this one too.
  if (passiveError !== null) logTickFailure(deps.log, ProbeJob, passiveError, { part: 'passive' });
  deps.log.info('probe run finished', { ...summary });
  return summary;
}

async function consumeOutcomes(
  deps: ProbeHandlerDeps,
  all: ProxyResource[],
  now: Date,
  summary: ProbeRunSummary,
  sent: Set<string>,
): Promise<string | null> {
  try {
    const c = await runPassivePass(deps, all, now, sent);
    summary.outcomeBatches += c.outcomeBatches;
    summary.passiveSignals += c.passiveSignals;
    summary.written += c.written;
    summary.transitions += c.transitions;
    return null;
  } catch (err) {
    // The active tiers must not stop because the outcome store is unavailable: the run goes on (and is
    // recorded ok, with this error). The cursor did not move, so the next tick reads the same batches
    // again — while they are fresh enough: a pass failing tick after tick ends the gateways' passive
    // verdicts. So the tick is logged failed once it ends (job.tick_failed, part "passive"), which the
    // failing_jobs alert counts. The message names the store's own error (its gRPC code) under the pass's.
    const cause = (err as { cause?: unknown }).cause;
    return cause === undefined ? messageOf(err) : `${messageOf(err)}: ${messageOf(cause)}`;
  }
}

/** The stored routes, read once per tick ([] when no routing is stored: no route, no TARGET check), or
 *  null when the read fails: BASIC and EGRESS must not stop for the fleet because the routing document is
 *  unavailable, so this tick runs no TARGET check and leaves every TARGET track as it is. */
async function readRoutes(deps: ProbeHandlerDeps): Promise<readonly RoutingRule[] | null> {
  try {
    return (await deps.routing.get())?.routes ?? [];
  } catch (err) {
    // The adapter classifies every failure (unavailable, or `invalid`: a hand-edited document); anything
    // else is a bug, and failing the run says so.
    if (!(err instanceof WorkerStoreError)) throw err;
    deps.log.warn('routing could not be read; no TARGET checks this tick, TARGET tracks kept', {
      kind: err.kind,
      error: err.message,
    });
    return null;
  }
}

/**
 * The fleet as the view has it now; a view whose listener has stopped following fails the run — probing
 * on would dial what may have been withdrawn since. Recorded as failed, the next run probes from here.
 */
function current(view: ProxyView): ProxyResource[] {
  const failed = view.failure();
  if (failed) throw failed;
  return view.current().proxies;
}

function earliestSlot(all: ProxyResource[], after: Date): Date | null {
  let min: number | null = null;
  for (const p of all) {
    if (!probeable(p)) continue;
    const t = nextSlotAfter(p.uid, p.spec.healthCheck.intervalSeconds * 1000, after).getTime();
    if (min === null || t < min) min = t;
  }
  return min === null ? null : new Date(min);
}
