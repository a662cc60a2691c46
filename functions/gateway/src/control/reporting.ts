// Runtime and outcome reports (docs/gateway-control-plane.md § Runtime report, § Outcomes; seed §2, §5),
// one round of each per report interval, never two rounds of a kind at once, and the two kinds apart: a
// slow outcome upload never holds up the runtime report that keeps the session and its capacity alive,
// nor the draining and final reports of a worker shutting down. A runtime report is a complete sparse
// replacement sitting exactly on the ACK bound, with a sequence strictly increasing within the session;
// its answer's revokeProxyIds stop new use of those proxies at once. Outcomes go in batches of at most
// the registration's limit, each retried under the same sequence until the controller has it — or until
// what it holds is too old to be fresh evidence (outcomeMaxAgeMs, aged on the monotonic clocks: dropped
// unsent, counted and logged; the next batch goes under the next sequence, which the controller takes: it
// keeps only the highest). While the controller is away no more are taken off the worker's bounded queue,
// which drops (and counts) the rest. A round refused 503, 401 or unanswered is tried again after a
// jittered exponential backoff (the session's policy; a runtime report's capped at the report interval, so
// a heartbeat never goes out later than it would have without the failure), not at the fixed interval's
// next tick.
import { loggedProxies } from '../../../../shared/src/adapters/log/logged-proxies.js';
import { type BackoffPolicy, backoffDelay } from '../../../../shared/src/domain/gateway/backoff.js';
import { controlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import { WORKER_LIMITS } from '../../../../shared/src/messages/worker-api.js';
import type { Outcome, TakenOutcome } from '../outcomes.js';
import type { RuntimeView } from '../session.js';
import type { ProxyRuntimeCount } from '../worker.js';
import { KickLoop, sleep } from './loops.js';
import { boundedRetryAfter, REFUSAL_LOG_QUIET_MS, slowRetryDelay } from './refusals.js';
import type { ControllerSession } from './session.js';
import type { SessionDeps, SessionSettings } from './session-settings.js';

const MAX_COUNT = 1_000_000;
/** Batches sent per round at most: the controller allows 10 outcome calls a second per worker. */
const MAX_BATCHES_PER_ROUND = 5;
/** An outcome is kept at most this many report intervals, if that is longer than outcomeMaxAgeMs. */
const OUTCOME_MAX_AGE_INTERVALS = 3;

export interface WireOutcome {
  proxy: string;
  stage: string;
  ok: boolean;
  latencyMs: number;
  target: string;
  status?: number;
  at: string;
}

/**
 * A batch of outcomes: its sequence once first sent; when each was seen (`seenMs`) and the oldest of them,
 * on the report loop's monotonic clock — never from `at`, the wall clock's, which a step moves.
 */
interface Batch {
  sequence: number | null;
  outcomes: WireOutcome[];
  seenMs: number[];
  oldestMs: number;
}

function batchOf(outcomes: WireOutcome[], seenMs: number[]): Batch {
  let oldestMs = Number.POSITIVE_INFINITY;
  for (const t of seenMs) oldestMs = Math.min(oldestMs, t);
  return { sequence: null, outcomes, seenMs, oldestMs };
}

/**
 * Outcomes as taken: each one's age on the worker's monotonic clock turned into a time on this loop's
 * (`monoMs`: its now), the two clocks never compared.
 */
function takenBatch(taken: readonly TakenOutcome[], monoMs: number): Batch {
  return batchOf(
    taken.map(toWireOutcome),
    taken.map((o) => monoMs - o.ageMs),
  );
}

function sliceOf(b: Batch, start: number, end?: number): Batch {
  return batchOf(b.outcomes.slice(start, end), b.seenMs.slice(start, end));
}

/**
 * When one kind of report may go again after a refusal or a failure: `until` (monotonic) silences the
 * interval's ticks; a failed call (retryIn) also runs the round once its backoff is over, jittered, rather
 * than at whichever tick comes next. A shutting-down worker's reports go whatever it says (reporting.ts).
 */
class Quiet {
  until = 0;
  /** Failed calls in a row: the backoff's step. */
  private failures = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly mono: () => number,
    private readonly run: () => void,
    /** Read at each failure: the runtime report's is capped at the report interval, which may change. */
    private readonly policy: () => BackoffPolicy,
    private readonly random: () => number,
  ) {}

  /** The next step of the backoff (jittered): a failed call's wait before the round runs again. */
  nextDelay(): number {
    return backoffDelay(this.failures++, this.policy(), this.random());
  }

  /** A call accepted: the backoff starts over. */
  succeeded(): void {
    this.failures = 0;
  }

  get on(): boolean {
    return this.mono() < this.until;
  }

  /** A 429 or a 403: no round before `ms` from now; the interval's next tick after it runs one. */
  for(ms: number): void {
    this.clearTimer();
    this.until = this.mono() + ms;
  }

  /** A call refused 503 / 401 or unanswered: the next round in `ms`, none before. */
  retryIn(ms: number): void {
    this.clearTimer();
    const until = this.mono() + ms;
    this.until = until;
    this.timer = setTimeout(() => {
      this.timer = null;
      // A timer may fire a hair before the monotonic clock reads `until`: the round must not skip itself.
      if (this.until === until) this.until = 0;
      this.run();
    }, ms);
    this.timer.unref?.();
  }

  reset(): void {
    this.clearTimer();
    this.until = 0;
    this.failures = 0;
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

export function toWireOutcome(o: Outcome): WireOutcome {
  return {
    proxy: o.proxy,
    stage: o.stage,
    ok: o.ok,
    latencyMs: Math.min(Math.max(0, Math.round(o.latencyMs)), 3_600_000),
    target: o.target.slice(0, 300),
    ...(o.status !== undefined && o.status >= 0 && o.status <= 999 ? { status: o.status } : {}),
    at: new Date(o.at).toISOString(),
  };
}

/**
 * At most `max` counts (the registration's limits.maxCounts), the ones that matter most kept: a report is
 * a complete replacement, so a proxy cut from it reads as zero. For a proxy being drained away that is
 * "drained" — its ownership would move while its tunnels still run here — so the draining ones go first;
 * a proxy still owned that is cut looks idle, and the controller would lease its capacity again. Within
 * each of the two, the busiest (active + reserved) go first, so whatever must be cut hides the fewest
 * tunnels and reservations. (Every count here is non-zero: Worker.runtimeCounts lists no idle proxy, and
 * one absent already reads as zero.) Under the limit: all, as given.
 */
export function reportedCounts(all: readonly ProxyRuntimeCount[], max: number) {
  const load = (c: ProxyRuntimeCount) => c.active + c.reserved;
  const ordered =
    all.length > max
      ? [...all].sort((a, b) => Number(b.draining) - Number(a.draining) || load(b) - load(a))
      : all;
  return ordered.slice(0, max).map((c) => ({
    proxy: c.proxy,
    active: Math.min(c.active, MAX_COUNT),
    reserved: Math.min(c.reserved, MAX_COUNT),
  }));
}

/** How many draining proxies a cut to `max` leaves out (each then reads as drained to the controller). */
export function drainingCut(all: readonly ProxyRuntimeCount[], max: number): number {
  return Math.max(0, all.filter((c) => c.draining).length - max);
}

export class ReportLoop {
  private view: RuntimeView | null = null;
  /** finish() began: the final report goes whatever is still looked up. */
  private finishing = false;
  private intervalMs: number;
  private timer: NodeJS.Timeout | null = null;
  private readonly round: KickLoop;
  private readonly outcomeRound: KickLoop;
  private runtimeSequence = 0;
  private outcomeSequence = 0;
  private readonly batches: Batch[] = [];
  private readonly runtimeQuiet: Quiet;
  private readonly outcomesQuiet: Quiet;
  /** Outcomes dropped for their age since the last line saying so (at most one per 30 s). */
  private readonly expiredLog = { at: Number.NEGATIVE_INFINITY, outcomes: 0, batches: 0 };
  /** The wall clock (observedAt, /healthz) and a monotonic one (waits), SessionDeps. */
  private readonly now: () => number;
  private readonly mono: () => number;
  /** What the last accepted report asked us to revoke (logged when it changes). */
  private revoked = '';
  lastRuntime: { sequence: number; at: number } | null = null;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    private readonly settings: SessionSettings,
  ) {
    this.intervalMs = settings.reportIntervalMs;
    this.now = deps.now ?? Date.now;
    this.mono = deps.monotonicNow;
    this.round = new KickLoop(
      () => this.runRound(),
      (err) => deps.log.error('report round failed', { error: String(err) }),
    );
    this.outcomeRound = new KickLoop(
      () => this.sendOutcomes(),
      (err) => deps.log.error('outcome round failed', { error: String(err) }),
    );
    const random = () => (this.deps.random ?? Math.random)();
    // The session's backoff, a runtime report's capped at the report interval: never a report later than
    // without the failure. Outcomes keep nothing alive: the session's backoff as registration and ACKs wait it.
    const runtimePolicy = () => ({
      initialMs: Math.min(this.settings.backoff.initialMs, this.intervalMs),
      maxMs: Math.min(this.settings.backoff.maxMs, this.intervalMs),
    });
    this.runtimeQuiet = new Quiet(this.mono, () => void this.round.kick(), runtimePolicy, random);
    this.outcomesQuiet = new Quiet(
      this.mono,
      () => void this.outcomeRound.kick(),
      () => this.settings.backoff,
      random,
    );
  }

  start(view: RuntimeView): void {
    this.view = view;
    this.schedule();
  }

  setInterval(ms: number): void {
    if (ms === this.intervalMs) return;
    this.intervalMs = ms;
    if (this.timer) this.schedule();
  }

  /** A new session: sequences start over; batches not yet accepted are renumbered under it. */
  newSession(): void {
    this.runtimeSequence = 0;
    this.outcomeSequence = 0;
    for (const b of this.batches) b.sequence = null;
    this.runtimeQuiet.reset();
    this.outcomesQuiet.reset();
  }

  reportSoon(): void {
    if (this.view) void this.round.kick();
  }

  /**
   * The last rounds at shutdown, bounded together by `timeoutMs`: the final runtime report first — it
   * hands the proxies over — then what is left of the outcomes; no round after them.
   */
  async finish(timeoutMs: number): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // No backoff's round after these either.
    this.runtimeQuiet.reset();
    this.outcomesQuiet.reset();
    if (!this.view) return;
    // The drain is over: every connection was cut, so a look-up still out has no request left to pick for.
    this.finishing = true;
    const bound = new AbortController();
    const last = this.round.kick().then(() => this.outcomeRound.kick());
    await Promise.race([last, sleep(timeoutMs, bound.signal)]);
    bound.abort();
  }

  private schedule(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => {
      void this.round.kick();
      void this.outcomeRound.kick();
    }, this.intervalMs);
    this.timer.unref?.();
  }

  private async runRound(): Promise<void> {
    if (this.session.signal.aborted) return;
    try {
      this.session.watchPull();
    } catch (err) {
      // Whatever the pull does, it never costs a report: reports are what keep the session alive.
      this.deps.log.error('snapshot pull could not be reopened', { error: String(err) });
    }
    await this.sendRuntime();
  }

  private limits() {
    return this.session.session?.registration.limits ?? WORKER_LIMITS;
  }

  private async sendRuntime(): Promise<void> {
    const s = this.session.session;
    const view = this.view;
    // A worker shutting down says so whatever silenced its reports (a 403's slow retry, a 429): the
    // draining and final reports are what hand its proxies over at the next pass, not at its grant's end.
    if (!s || !view || (this.runtimeQuiet.on && !this.session.draining)) return;
    if (!this.session.ackBound) {
      // Reports sit on the ACK bound (no_ack before the first ACK): ACK first.
      if (this.session.applied) this.session.kickAck();
      // Nothing keeps the session alive meanwhile: past its TTL, find out whether it still is.
      this.session.probeUnreported();
      // Except the last word of a worker shutting down idle before any ACK (SIGTERM during the start
      // wait): draining, every count zero, naming no snapshot (version 0) — the one report the controller
      // takes without an ACK; it hands this worker's proxies over at once (docs/gateway-control-plane.md
      // § Runtime report). Busy, it would be refused: the ACK comes first.
      if (!this.session.draining || view.runtimeCounts().length > 0) return;
    }
    const sequence = ++this.runtimeSequence;
    const answer = await this.session.exclusive(() => {
      // Read inside the exclusive section: an ACK that moved the bound has finished.
      const bound = this.session.ackBound;
      if (this.session.session?.sessionId !== s.sessionId) return Promise.resolve(null);
      if (!bound && !this.session.draining) return Promise.resolve(null);
      const counts = this.counts(view);
      // Draining with every count zero is the last word: the controller hands every proxy over at once
      // (drain.ts shutDownIdle). Not while an admitted request still waits for its look-up — a /v1/fetch's
      // redial runs the guard again — for it picks a proxy when the answer comes: that report waits for it.
      // Read with the counts it sends, in the same turn: checked before the report queued behind an ACK, a
      // reservation's failed dial could move it from the counts back to the look-up in between.
      if (this.session.draining && !this.finishing && view.checking > 0 && counts.length === 0)
        return Promise.resolve(null);
      return this.deps.client.runtime(this.deps.workerId, {
        sessionId: s.sessionId,
        reportSequence: sequence,
        snapshotVersion: bound?.version ?? 0,
        epoch: bound?.epoch ?? s.registration.ownershipEpoch,
        draining: this.session.draining,
        observedAt: new Date(this.now()).toISOString(),
        counts,
      });
    });
    if (!answer) return;
    if (answer.ok) {
      this.runtimeQuiet.succeeded();
      if (this.session.session?.sessionId === s.sessionId) this.session.heard();
      this.lastRuntime = { sequence, at: this.now() };
      this.revoke(view, answer.body.revokeProxyIds);
      return;
    }
    // Refused as stale_epoch: a drain started and its snapshot has not been applied here yet — the one
    // moment the revocation the refusal carries is worth anything (contract §4).
    if (answer.code === 'stale_epoch' && answer.revokeProxyIds) this.revoke(view, answer.revokeProxyIds);
    const reaction = controlReaction(answer.status, answer.code);
    // 503, 401 (the client has dropped its token: the next call gets a fresh one), no answer at all: again
    // after the backoff, capped at the interval — the report is the heartbeat the controller counts this
    // worker's capacity by for reportTtlSeconds (above the interval), so a failure never puts it off.
    // A round of a session since replaced (newSession reset the backoff) sets no retry for the new one.
    const current = this.session.session?.sessionId === s.sessionId;
    const retryIn = backsOff(reaction) && current ? this.runtimeQuiet.nextDelay() : null;
    this.session.logRefusal('runtime report', answer, reaction, retryIn);
    if (retryIn !== null) this.runtimeQuiet.retryIn(retryIn);
    else if (reaction === 'ack_first') {
      // Our idea of the bound is not the controller's: ACK the applied snapshot again.
      if (this.session.session?.sessionId === s.sessionId) this.session.ackBound = null;
      this.session.kickAck(true);
    } else if (reaction === 'reregister') this.session.reregister(s.sessionId);
    else if (reaction === 'rate_limited') this.runtimeQuiet.for(this.quietFor(answer.retryAfterMs));
    else if (reaction === 'retry_slowly') this.runtimeQuiet.for(this.slowly());
  }

  /** How old an outcome may be when it goes out: outcomeMaxAgeMs, or 3 report intervals if longer. */
  private outcomeMaxAgeMs(): number {
    return Math.max(this.settings.outcomeMaxAgeMs, OUTCOME_MAX_AGE_INTERVALS * this.intervalMs);
  }

  /**
   * Drops what of `batch` is older than the age bound, counted (gateway_outcomes_expired_total) and
   * logged; true when nothing of it is left. What is left goes under the batch's sequence all the same: had
   * the controller stored it already, it answers a duplicate, and it keeps no content per sequence.
   */
  private expire(batch: Batch, view: RuntimeView): boolean {
    const maxAgeMs = this.outcomeMaxAgeMs();
    // Monotonic: a wall clock stepped back would make outcomes held through an outage read younger.
    const now = this.mono();
    const cutoff = now - maxAgeMs;
    if (batch.oldestMs >= cutoff) return false;
    const oldestAgeMs = now - batch.oldestMs;
    const keep: WireOutcome[] = [];
    const keepSeen: number[] = [];
    for (let i = 0; i < batch.outcomes.length; i++) {
      if (batch.seenMs[i]! < cutoff) continue;
      keep.push(batch.outcomes[i]!);
      keepSeen.push(batch.seenMs[i]!);
    }
    const kept = batchOf(keep, keepSeen);
    const expired = batch.outcomes.length - kept.outcomes.length;
    batch.outcomes = kept.outcomes;
    batch.seenMs = kept.seenMs;
    batch.oldestMs = kept.oldestMs;
    view.outcomesExpired(expired);
    const log = this.expiredLog;
    log.outcomes += expired;
    if (kept.outcomes.length === 0) log.batches++;
    // One line, then at most one per 30 s while it goes on (an outage of the controller), with the counts since.
    if (this.mono() - log.at >= REFUSAL_LOG_QUIET_MS) {
      this.deps.log.warn('outcomes dropped unsent: too old to report as fresh evidence', {
        event: 'gateway.outcomes_expired',
        workerId: this.deps.workerId,
        outcomes: log.outcomes,
        batches: log.batches,
        oldestAgeMs,
        maxAgeMs,
      });
      log.at = this.mono();
      log.outcomes = 0;
      log.batches = 0;
    }
    return kept.outcomes.length === 0;
  }

  /** A 403 (configuration: contract §7) silences that kind of report for a jittered slow retry. */
  private slowly(): number {
    return slowRetryDelay(this.settings, this.deps.random ?? Math.random);
  }

  /** How long a 429 silences reports: its Retry-After, bounded (refusals.ts), 1 s without one. */
  private quietFor(retryAfterMs: number | undefined): number {
    return retryAfterMs === undefined ? 1000 : boundedRetryAfter(retryAfterMs, this.settings);
  }

  /** The controller's whole current set of revocations (each answer replaces the last). */
  private revoke(view: RuntimeView, ids: readonly string[]): void {
    view.revokeProxyIds(ids);
    const key = [...ids].sort().join(',');
    if (key !== this.revoked) {
      this.revoked = key;
      // Up to the worker's whole share (20,000 proxies): the count and the first ids, never the whole list.
      if (ids.length) this.deps.log.info('proxies revoked by the controller', loggedProxies(ids));
    }
  }

  private counts(view: RuntimeView) {
    const all = view.runtimeCounts();
    const max = this.limits().maxCounts;
    if (all.length > max) {
      this.deps.log.warn('runtime report truncated to the controller limit', {
        counts: all.length,
        max,
        drainingCut: drainingCut(all, max),
      });
    }
    return reportedCounts(all, max);
  }

  private async sendOutcomes(): Promise<void> {
    const view = this.view;
    for (let calls = 0; calls < MAX_BATCHES_PER_ROUND; ) {
      const s = this.session.session;
      const quiet = this.outcomesQuiet.on && !this.session.draining;
      if (!s || !view || quiet || this.session.signal.aborted) return;
      if (this.batches.length === 0) {
        const taken = view.takeOutcomes(this.limits().maxOutcomes);
        if (taken.length === 0) return;
        this.batches.push(takenBatch(taken, this.mono()));
      }
      const batch = this.batches[0]!;
      if (this.expire(batch, view)) {
        this.batches.shift(); // its sequence, if it had one, is never sent again: the next one follows it
        continue;
      }
      batch.sequence ??= ++this.outcomeSequence;
      calls++;
      const answer = await this.deps.client.outcomes(this.deps.workerId, {
        sessionId: s.sessionId,
        sequence: batch.sequence,
        outcomes: batch.outcomes,
      });
      if (answer.ok) {
        this.outcomesQuiet.succeeded();
        this.batches.shift();
        continue;
      }
      const reaction = controlReaction(answer.status, answer.code);
      const current = this.session.session?.sessionId === s.sessionId;
      const retryIn = backsOff(reaction) && current ? this.outcomesQuiet.nextDelay() : null;
      this.session.logRefusal('outcomes', answer, reaction, retryIn);
      if (reaction === 'split' && batch.outcomes.length > 1) {
        const half = Math.ceil(batch.outcomes.length / 2);
        this.batches.splice(0, 1, sliceOf(batch, 0, half), sliceOf(batch, half));
        continue;
      }
      if (reaction === 'split' || reaction === 'drop') {
        this.batches.shift(); // a bug on our side: retrying the same batch cannot help
        continue;
      }
      if (retryIn !== null) this.outcomesQuiet.retryIn(retryIn);
      else if (reaction === 'reregister') this.session.reregister(s.sessionId);
      else if (reaction === 'rate_limited') this.outcomesQuiet.for(this.quietFor(answer.retryAfterMs));
      else if (reaction === 'retry_slowly') this.outcomesQuiet.for(this.slowly());
      return;
    }
  }
}

/** 503 and other 5xx, no answer at all (status 0), 401: the failures a backoff is for (contract §7). */
const backsOff = (reaction: string) => reaction === 'retry' || reaction === 'reauthenticate';
