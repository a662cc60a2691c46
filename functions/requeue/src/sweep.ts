// The requeue sweep: the workqueue's RequeueAfter timers, on Firestore (brief: "status.nextReconcileAt,
// drained by a Scheduler-driven sweep ... sub-minute precision while work is due"). Cloud Scheduler ticks
// once a minute, so one invocation keeps running until just before the next tick, publishing each proxy
// at its due time: it polls listDue a little ahead and sleeps until the earliest pending moment. Steady
// proxies store no due time; they are published on their drift slots (domain/reconcile/drift.ts), as are
// proxies that need a pass but whose request was lost or dead-lettered (awaitsPass).
// A steady fleet costs reads only, never a write. A proxy published twice (overlapping sweeps, a late
// write) costs one idempotent reconcile pass, so double publishing is avoided where cheap, never relied on.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { withDeadline } from '../../../shared/src/adapters/deadline.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { loggedProxies } from '../../../shared/src/adapters/log/logged-proxies.js';
import { awaitsPassSlotDue, driftSlots } from '../../../shared/src/domain/reconcile/drift.js';
import type { Clock } from '../../../shared/src/ports/clock.js';
import type { ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import { mayStillBeSent, PublishError } from '../../../shared/src/ports/publish-error.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import { PublishMemory } from './publish-memory.js';
import { listSteady, SteadyFleet } from './steady-fleet.js';

export interface SweepDeps {
  store: Pick<ProxyStore, 'listDue' | 'listPage'>;
  publisher: ReconcilePublisher;
  clock: Clock;
  sleep: (ms: number) => Promise<void>;
  log: Logger;
  /** Time between two Scheduler ticks: one sweep covers that window. */
  tickPeriodMs: number;
  /** Stop this long before the next tick, so sweeps do not overlap. */
  marginMs: number;
  /** How often listDue is polled inside the window (and how far ahead it looks). */
  pollMs: number;
  driftPollMs: number;
  /** listDue page size; doubled (up to maxBatch) while a full page holds nothing new to this walk. */
  batch: number;
  maxBatch: number;
  /** Shared by the sweeps of one function instance; a fresh one per sweep when absent. */
  memory?: PublishMemory;
  /** The steady fleet, listed at most this often by one instance; listed every sweep when absent. */
  steady?: SteadyFleet;
  /**
   * How long the steady fleet's listing may take (real time) before the sweep goes on without its drift
   * slots: half the window when absent. The client resends a query past its deadline for minutes, longer
   * than the window and the function's timeout, and the due times wait for it.
   */
  listingTimeoutMs?: number;
}

export interface SweepReport {
  due: number;
  drift: number;
  publishFailures: number;
  polls: number;
  /** Where the next sweep's drift range starts: this one's end, or where it began when not all of it is
   *  known to be published (recorded with the run: jobRuns/requeue-sweep `nextWindowStart`). */
  nextDriftFrom: Date;
  /** Why the sweep stopped early (listDue: Firestore unavailable); undefined when it ran its window. */
  failure?: unknown;
  /** Why this sweep published no drift slot (the steady fleet could not be listed); the due times were. */
  driftSkipped?: unknown;
}

/**
 * The window a sweep of the tick stamped `tickAt` covers when it starts at `now`: from the tick — or now,
 * for a tick stamped in the future (skew) — until `end` (ms), when it stops polling (its job run records
 * that as its deadline). A tick delivered after its window closed (a redelivery) still gets one poll.
 */
export function sweepWindow(
  deps: Pick<SweepDeps, 'tickPeriodMs' | 'marginMs'>,
  tickAt: Date,
  now: Date,
): { start: Date; end: number } {
  const start = tickAt.getTime() > now.getTime() ? now : tickAt;
  return { start, end: Math.max(start.getTime() + deps.tickPeriodMs - deps.marginMs, now.getTime() + 1) };
}

/**
 * `resumeDriftAt`: where the last finished sweep — of any instance, as its job run recorded it — left
 * the drift range (null when unknown: the record unreadable, or the last run still within its window).
 */
export async function runSweep(
  deps: SweepDeps,
  tickAt: Date,
  resumeDriftAt: Date | null = null,
): Promise<SweepReport> {
  const started = deps.clock.now();
  const { start: windowStart, end: windowEnd } = sweepWindow(deps, tickAt, started);
  const report: SweepReport = { due: 0, drift: 0, publishFailures: 0, polls: 0, nextDriftFrom: windowStart };

  const memory = deps.memory ?? new PublishMemory(deps.tickPeriodMs);
  const pending: Pending[] = [];
  /** false when this (proxy, due time) is already pending or was published recently. */
  const schedule = (proxy: string, at: number, drift: boolean, steady = false): boolean => {
    if (!memory.claim(proxy, at, deps.clock.now().getTime())) return false;
    pending.push({ at, proxy, drift, steady });
    return true;
  };

  // Ticks are never exactly a period apart (Cloud Scheduler publishes each a varying moment after its
  // minute; the local scheduler's chained timers run late): a drift slot between the end of one tick's
  // range and the next tick would belong to neither. A range starts where the last finished sweep's ended
  // (or began, when it failed) as its job run recorded it — whichever instance ran it — up to two periods
  // back. Without that record, where this instance's last one ended when that is at most half a period
  // back (jitter — not a tick another instance swept in between), or up to FAILED_REACH periods back when
  // it failed (resumeDriftFrom). What this instance published meanwhile is in the memory.
  const last = memory.drift;
  const resume = resumeDriftFrom(resumeDriftAt, last, windowStart.getTime(), deps.tickPeriodMs);
  const driftFrom = resume === null ? windowStart : new Date(resume);
  const driftTo = new Date(windowStart.getTime() + deps.tickPeriodMs);
  let nextPoll = started.getTime();
  // A drift slot whose publish failed has no due time in Firestore for a poll to find again: the range is
  // then recorded as failed, so that the next sweep covers it again (the memory skips what went out).
  let driftPublishFailed = false;
  const unclaim = (item: { proxy: string; drift: boolean }) => {
    memory.release(item.proxy);
    if (item.drift) driftPublishFailed = true;
  };
  // The steady fleet's listing failing (at scale, a deadline) takes this sweep's drift slots with it, not
  // the due times: Provisioning and deletion polls, backoffs and queued replacements are walked and
  // published as ever, and the run is recorded failed with its drift range to be covered again.
  let steadyFailure: unknown = null;
  // Not awaited before the first poll: a listing (up to timeoutMs, half the window) held every due time of
  // the sweep back behind it. Its drift slots are scheduled once it has landed (`steady.fleet`).
  const steady: { fleet?: Awaited<ReturnType<SteadyFleet['get']>> } = {};
  const listing = (deps.steady ?? new SteadyFleet(0)).get(started.getTime(), () => listSteadyLogged(deps));
  const timeoutMs = deps.listingTimeoutMs ?? Math.max(1_000, (windowEnd - started.getTime()) / 2);
  const listed = withDeadline(
    listing,
    timeoutMs,
    () => new Error(`listing the steady fleet took over ${Math.round(timeoutMs)} ms`),
  ).then(
    (fleet) => {
      steady.fleet = fleet;
    },
    (err: unknown) => {
      steadyFailure = err;
      steady.fleet = [];
      deps.log.error('requeue sweep could not list the steady fleet: drift slots wait for the next sweep', {
        error: err instanceof Error ? err.message : String(err),
      });
    },
  );
  let slotted = false;
  try {
    let walkedAt = Number.NEGATIVE_INFINITY;
    // Where the last poll's range ended: the next starts there (or RECENT_POLLS back, if earlier), so a loop
    // held up — a slow publish, a long walk — leaves no due time between two polls unread.
    let polledUntil = Number.NEGATIVE_INFINITY;
    for (;;) {
      const now = deps.clock.now().getTime();
      const open = now < windowEnd;
      // The first poll whatever the clock says: a late tick's window is a millisecond long, and the clock
      // may have moved past it before the loop's first look.
      if ((open || polledUntil === Number.NEGATIVE_INFINITY) && now >= nextPoll) {
        const backlog = now - walkedAt >= BACKLOG_EVERY_MS;
        const recentFrom = Math.min(polledUntil, now - RECENT_POLLS * deps.pollMs);
        const from = backlog ? undefined : new Date(recentFrom);
        report.polls += await walkDue(deps, now, from, windowEnd, (d) =>
          schedule(d.name, d.nextReconcileAt.getTime(), false),
        );
        if (backlog) walkedAt = now;
        polledUntil = now + deps.pollMs;
        nextPoll = now + deps.pollMs;
      }
      // The listing's drift slots once it has landed — waited for once the window has closed. One already
      // answered (the instance's cached fleet, a quick read) lands within a turn of the event loop: its
      // slots due now go out with this poll's, as when the listing was awaited first.
      if (!slotted) await (open ? Promise.race([listed, nextTurn()]) : listed);
      if (!slotted && steady.fleet !== undefined) {
        slotted = true;
        for (const p of steady.fleet) {
          for (const slot of driftSlots(p.uid, deps.driftPollMs, driftFrom, driftTo, p.notBefore)) {
            if (p.awaitingSince && !awaitsPassSlotDue(p.awaitingSince, slot, deps.driftPollMs)) continue;
            schedule(p.name, slot.getTime(), true, p.driftPolled === true);
          }
        }
      }
      pending.sort((a, b) => a.at - b.at);
      const ready = open ? pending.filter((x) => x.at <= now) : pending.splice(0);
      if (open) pending.splice(0, ready.length);
      await publishAll(deps, ready, report, unclaim);
      if (!open && pending.length === 0) break;
      const wakeAt = Math.min(nextPoll, pending[0]?.at ?? Number.POSITIVE_INFINITY, windowEnd);
      const sleeping = deps.sleep(Math.max(1, wakeAt - deps.clock.now().getTime()));
      // Woken by the listing too, so that its slots already due are not held to the next poll.
      await (slotted ? sleeping : Promise.race([sleeping, listed]));
    }
  } catch (err) {
    // A failed sweep (listDue: Firestore unavailable, or no answer by its bound) leaves nothing it never published claimed, or the
    // next sweeps would take it for published and it would wait out the memory instead of its due time.
    // Returned, not thrown: the run is recorded (not ok) with where the next sweep takes the range up.
    for (const x of pending) memory.release(x.proxy);
    memory.drift = { through: driftFrom.getTime(), failed: true };
    report.nextDriftFrom = driftFrom;
    report.failure = err;
    return report;
  }
  // Never behind a range already covered (a redelivered old tick's range ends earlier than the last one).
  const through = Math.max(
    driftTo.getTime(),
    last && !last.failed ? last.through : Number.NEGATIVE_INFINITY,
    resumeDriftAt?.getTime() ?? Number.NEGATIVE_INFINITY,
  );
  memory.drift =
    driftPublishFailed || steadyFailure !== null
      ? { through: driftFrom.getTime(), failed: true }
      : { through, failed: false };
  report.nextDriftFrom = new Date(memory.drift.through);
  if (steadyFailure !== null) report.driftSkipped = steadyFailure;
  deps.log.info('requeue sweep', {
    due: report.due,
    drift: report.drift,
    publishFailures: report.publishFailures,
    polls: report.polls,
    windowMs: windowEnd - windowStart.getTime(),
  });
  return report;
}

/**
 * Where this sweep's drift range starts (ms), or null for its own tick: where the last finished sweep
 * recorded the next range starts, from two periods before this tick to one after it (everything before it
 * is covered: a tick a little early starts past the part of its range the last sweep covered, rather than
 * publishing that part again from another instance) — or earlier, where this instance's own last sweep
 * failed, if it did within two periods (its run may not have recorded that: Firestore was what failed);
 * else this instance's own last end, from half a period back (two when that sweep failed) to this tick —
 * what this instance covered after its tick is in its memory. Covering a range twice costs duplicate
 * passes; a range nobody covers costs drift polls.
 */
function resumeDriftFrom(
  recorded: Date | null,
  own: { through: number; failed: boolean } | null,
  windowStart: number,
  periodMs: number,
): number | null {
  const ownGap = own ? windowStart - own.through : Number.POSITIVE_INFINITY;
  // Two ticks on, give or take the seconds a tick is published late (`tickAt` is its publish time).
  const ownFailed = own?.failed === true && ownGap > 0 && ownGap <= FAILED_REACH * periodMs;
  if (recorded) {
    const gap = windowStart - recorded.getTime();
    if (gap <= 2 * periodMs && gap > -periodMs) {
      return ownFailed ? Math.min(recorded.getTime(), own!.through) : recorded.getTime();
    }
  }
  if (own && ownGap > 0 && ownGap <= (own.failed ? FAILED_REACH : 0.5) * periodMs) return own.through;
  return null;
}

/** How many periods back an instance takes up the range of its own failed sweep. */
const FAILED_REACH = 2.5;

/**
 * The whole overdue range is walked (page after page) on a sweep's first poll and then this often; the
 * polls between read from where the last poll's range ended, or RECENT_POLLS polls back if earlier (a due
 * time written a little late). A proxy stuck overdue — its pass failing without writing through an
 * outage — is then read once per walk, not once a poll.
 */
const BACKLOG_EVERY_MS = 15_000;
const RECENT_POLLS = 5;

/** Pages one walk reads at most (pages doubling from 500 to 8,000: ~375,000 due proxies), so a runaway
 *  cannot hold the sweep. */
const MAX_WALK_PAGES = 50;

/**
 * How long past the window's end (and at least how long, for a page asked after it: a late tick's one
 * poll, a cold instance's first query) a listDue page is waited for. The client resends a query for
 * minutes when Firestore is degraded: unbounded, one stalled page held the sweep past its window and the
 * function's timeout (120 s), which cut it off unrecorded, with no failed tick logged and what it had
 * scheduled still held in the instance's memory. Bounded by the window rather than by a page's usual time:
 * a slow page answered inside the window still has its due times published in it, while one answered
 * past it has nothing left to publish them in (the next tick's sweep reads them again).
 */
export const LIST_DUE_GRACE_MS = 5_000;

/**
 * Every proxy due by now + pollMs (from `from` on, when given), page after page; returns how many pages
 * it read. Each page starts at the last due time of the one before (inclusive; names already seen in this
 * walk are skipped), so a run of proxies stuck overdue is read once and passed, never re-read while later
 * ones starve — up to MAX_WALK_PAGES, and unless more than maxBatch proxies share one due time. A page not
 * answered by `windowEnd` + max(pollMs, LIST_DUE_GRACE_MS) fails the walk as a failed page does: the sweep
 * stops, releases what it scheduled and is recorded failed (runSweep).
 */
async function walkDue(
  deps: SweepDeps,
  now: number,
  from: Date | undefined,
  windowEnd: number,
  visit: (d: { name: string; nextReconcileAt: Date }) => void,
): Promise<number> {
  const until = new Date(now + deps.pollMs);
  const seen = new Set<string>();
  let cursor = from;
  let limit = deps.batch;
  let pages = 0;
  while (pages < MAX_WALK_PAGES) {
    const ms = Math.max(0, windowEnd - deps.clock.now().getTime()) + Math.max(deps.pollMs, LIST_DUE_GRACE_MS);
    const due = await withDeadline(
      deps.store.listDue(until, limit, cursor),
      ms,
      () => new Error(`listDue gave no answer within ${ms} ms (the window's end and a grace)`),
    );
    pages++;
    const unseen = due.filter((d) => !seen.has(d.name));
    for (const d of unseen) {
      seen.add(d.name);
      visit(d);
    }
    if (due.length < limit) break;
    // Each page starts at the last due time read and is twice as large, up to maxBatch: a long run takes
    // fewer queries, and proxies sharing one due time are passed as long as the largest page holds them
    // (a page with nothing new — more of them than maxBatch — ends the walk).
    if (unseen.length === 0) break;
    limit = Math.min(limit * 2, deps.maxBatch);
    cursor = due[due.length - 1]!.nextReconcileAt;
  }
  return pages;
}

/** Names logged per line: the count says how many more. */
const LOGGED_SKIPPED = 20;

/**
 * The steady fleet, saying which documents it left out because they do not fit the model: such a proxy
 * gets no drift poll (nothing in it can be trusted to say when one is due) until it is repaired or
 * deleted. Logged on each listing (at most every refresh of the steady fleet), names and failing field
 * paths only, never the stored values.
 */
async function listSteadyLogged(deps: SweepDeps) {
  const { proxies, skipped } = await listSteady(deps.store, deps.driftPollMs);
  if (skipped.length > 0) {
    const logged = loggedProxies(skipped, LOGGED_SKIPPED);
    deps.log.warn('proxy documents that do not fit the model were skipped by the drift poll', {
      event: 'requeue.invalid_documents_skipped',
      ...logged,
      proxies: logged.proxies.map((s) => ({ name: s.name, fields: s.issues.map((i) => i.path) })),
    });
  }
  return proxies;
}

/**
 * A proxy to publish at `at`: a due time (`drift` false), or a drift slot — `steady` for a drift-polled
 * proxy (a steady phase, whether or not a spec edit awaits its pass), published as a `drift-poll` (not
 * retried when its pass fails: its next slot polls again), else any other awaiting a pass (external, a
 * deletion requested, Pending, Failed), published as a `requeue` (retried: nothing else asks for it).
 */
interface Pending {
  at: number;
  proxy: string;
  drift: boolean;
  steady?: boolean;
}

async function publishAll(
  deps: SweepDeps,
  items: Pending[],
  report: SweepReport,
  forget: (item: { proxy: string; drift: boolean }) => void,
): Promise<void> {
  const results = await Promise.allSettled(
    items.map((x) => deps.publisher.publish({ proxy: x.proxy, reason: x.steady ? 'drift-poll' : 'requeue' })),
  );
  results.forEach((r, i) => {
    const item = items[i]!;
    if (r.status === 'fulfilled') {
      if (item.drift) report.drift++;
      else report.due++;
      return;
    }
    if (r.reason instanceof PublishError && r.reason.kind === 'invalid_payload') {
      // A document whose id is no proxy name (made by hand, or imported) fails the request's schema on
      // every publish: no retry sends it. Counted a publish failure, it failed every tick for good (the
      // failing-jobs alert) and was published again on every walk. Held as published, said once a hold.
      deps.log.error('requeue: a due proxy document cannot be published (its id is no proxy name?)', {
        event: 'requeue.unpublishable',
        proxy: item.proxy,
        error: r.reason,
      });
      return;
    }
    report.publishFailures++;
    if (mayStillBeSent(r.reason)) {
      // Not confirmed in time, but the client library still holds it and may send it: kept as published
      // (the memory's hold). Taken for unsent, the next poll — a second later — would hand the library
      // another copy, and a Pub/Sub brownout would pile up copies of every due proxy.
      deps.log.warn('requeue publish unconfirmed; held as published', { proxy: item.proxy, error: r.reason });
      return;
    }
    // A due time stays in Firestore: forgetting it lets the next poll (or sweep) publish it again; a drift
    // slot's range is covered again by the next sweep (runSweep).
    forget(item);
    deps.log.warn('requeue publish failed', { proxy: item.proxy, error: r.reason });
  });
}
