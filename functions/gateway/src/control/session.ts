// The worker's session with the control plane (docs/gateway-control-plane.md; control-plane seed §2–§5,
// §7): register → streaming pull of its own subscription → validate, apply (the worker builds the
// immutable form and swaps one reference) → ACK; a delta that does not apply, or an ACK the controller
// does not recognise, is answered by fetching the latest full snapshot. Every call to the controller
// retries with bounded exponential backoff and jitter, reacting to the contract's stable codes
// (controlReaction). This class holds the session's state and decides what each event leads to; the
// retry loops share that state: registration and protocol step-down (registration.ts) and the offer of
// the highest protocol again while below it (protocol-upgrade.ts), the pull
// (snapshot-pull.ts), ACKs (ack-loop.ts), the latest full snapshot (full-snapshot.ts), runtime and
// outcome reports (reporting.ts); how a refusal is waited out and logged is in refusals.ts.
import { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';
import type { ControlReaction } from '../../../../shared/src/domain/gateway/control-reaction.js';
import type { RegisterResponseBody } from '../../../../shared/src/messages/worker-api.js';
import type { Reporter, RuntimeView, SnapshotSink, SnapshotSource } from '../session.js';
import { runSliced } from '../slices.js';
import type { ApplyResult } from '../worker.js';
import { type AckBound, AckLoop, isAcked } from './ack-loop.js';
import type { FeedMessage } from './feed.js';
import { FullSnapshotFetch } from './full-snapshot.js';
import { sleep } from './loops.js';
import { decodeSnapshotSlices } from './message.js';
import { ProtocolUpgrade } from './protocol-upgrade.js';
import { type Refusal, RefusalLog, retryDelay } from './refusals.js';
import { RegisterLoop } from './registration.js';
import { ReportLoop } from './reporting.js';
import {
  type Applied,
  DEFAULT_SESSION_SETTINGS,
  type SessionDeps,
  type SessionFatalError,
  type SessionSettings,
  type SessionState,
} from './session-settings.js';
import { SnapshotPull } from './snapshot-pull.js';

export {
  DEFAULT_SESSION_SETTINGS,
  type SessionDeps,
  SessionFatalError,
  type SessionSettings,
  type SessionState,
} from './session-settings.js';

export class ControllerSession {
  readonly settings: SessionSettings;
  readonly source: SnapshotSource;
  readonly reporter: Reporter;
  /** The current session, null while (re-)registering. */
  session: SessionState | null = null;
  /** The last snapshot the worker applied (full, delta or fetched). */
  applied: Applied | null = null;
  /** The controller's ACK bound for this session: what runtime reports sit on. */
  ackBound: AckBound | null = null;
  /** Set once stop() began: the next reports say `draining: true`. */
  draining = false;
  readonly counters = { foreign: 0, poison: 0, refused: 0, fetched: 0 };

  /** Where snapshots go (the worker), from SnapshotSource.start on. */
  sink: SnapshotSink | null = null;

  private readonly abort = new AbortController();
  private readonly random: () => number;
  /** Monotonic (SessionDeps.monotonicNow): only durations are measured with it. */
  private readonly now: () => number;
  private readonly registration: RegisterLoop;
  private readonly upgrade: ProtocolUpgrade;
  private readonly acks: AckLoop;
  private readonly fetching: FullSnapshotFetch;
  private readonly pull: SnapshotPull;
  private readonly reports: ReportLoop;
  private readonly refusals: RefusalLog;
  private lastSessionId: string | null = null;
  /** The ownershipEpoch of the last registration: no snapshot below it is applied (refusedBelowFloor). */
  private epochFloor = 0;
  /** When the current session was granted, and how many sessions in a row were lost soon after. */
  private grantedAt = 0;
  /** When the controller last heard of this session (monotonic): granted, an ACK or report accepted, a probe. */
  private heardAt = 0;
  private quickLosses = 0;
  private readonly quickLossBackoff: Backoff;
  /** The subscription was gone: once registration has made it again, fetch what was published meanwhile. */
  private fetchAfterRegistration = false;
  private firstApplied: (() => void) | null = null;
  /** The version of the first snapshot applied (the start wait: onResult). */
  private firstVersion: number | null = null;
  private fatal: SessionFatalError | null = null;
  private fallbackTimer: NodeJS.Timeout | null = null;
  private calls: Promise<unknown> = Promise.resolve();
  /** The pull's close, begun at SnapshotSource.stop. */
  private pullClosed: Promise<void> | undefined;
  /** When shutdown began (monotonic; the process's stop signal): bounds the wait for a register call in flight. */
  private drainingSince: number | null = null;

  constructor(private readonly deps: SessionDeps) {
    this.settings = { ...DEFAULT_SESSION_SETTINGS, ...deps.settings };
    this.random = deps.random ?? Math.random;
    this.now = deps.monotonicNow;
    const onError = (what: string) => (err: unknown) =>
      deps.log.error(`control session: ${what} failed`, { error: String(err) });
    const { settings, random } = this;
    this.reports = new ReportLoop(this, deps, settings);
    this.registration = new RegisterLoop(this, deps, settings, random, onError('registration'));
    this.upgrade = new ProtocolUpgrade(this, deps, settings, onError('protocol upgrade'));
    this.acks = new AckLoop(this, deps, this.reports, settings, random, onError('ACK'));
    this.fetching = new FullSnapshotFetch(this, deps, settings, random, this.now, onError('snapshot fetch'));
    this.pull = new SnapshotPull(this, deps, settings, random, this.now, (m) => this.onMessage(m));
    this.refusals = new RefusalLog(deps.log, deps.workerId, this.now);
    this.quickLossBackoff = new Backoff(settings.backoff, random);
    this.source = {
      start: (sink, stopping) => this.start(sink, stopping),
      stop: () => this.stopPulling(),
    };
    this.reporter = { start: (view) => this.startReporting(view), stop: () => this.stop() };
  }

  /** For /healthz: never a credential, only the session's shape. */
  status(): Record<string, unknown> {
    return {
      workerId: this.deps.workerId,
      sessionId: this.session?.sessionId ?? null,
      registered: this.session !== null,
      appliedVersion: this.applied?.version ?? null,
      ackBound: this.ackBound,
      draining: this.draining,
      lastRuntimeReportAt: this.reports.lastRuntime
        ? new Date(this.reports.lastRuntime.at).toISOString()
        : null,
      messages: { ...this.counters },
    };
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------

  /**
   * Registers and waits for the first snapshot, at most startWaitMs — less if the process is told to stop
   * meanwhile (`stopping`: SIGTERM during the start wait), when the caller goes straight on to stop().
   */
  private async start(sink: SnapshotSink, stopping?: AbortSignal): Promise<void> {
    this.sink = sink;
    // Shutdown begins at the signal, not at SnapshotSource.stop: startGateway's shutdown first waits (up to
    // the drain bound) for requests still in their DNS look-up, and the wait for a register call in flight
    // is bounded from the signal (registrationAnswered), or it could run past Cloud Run's 10 s.
    if (stopping?.aborted) this.drainingSince ??= this.now();
    else
      stopping?.addEventListener(
        'abort',
        () => {
          this.drainingSince ??= this.now();
        },
        { once: true },
      );
    const first = new Promise<void>((resolve) => {
      this.firstApplied = resolve;
    });
    if (!stopping?.aborted) void this.registration.kick();
    const waited = new AbortController();
    const onStop = () => waited.abort();
    for (const s of [this.signal, stopping]) s?.addEventListener('abort', onStop, { once: true });
    if (stopping?.aborted) waited.abort();
    await Promise.race([first, sleep(this.settings.startWaitMs, waited.signal)]);
    waited.abort();
    for (const s of [this.signal, stopping]) s?.removeEventListener('abort', onStop);
    if (this.fatal) throw this.fatal;
    if (!this.applied && !stopping?.aborted)
      this.deps.log.warn('no snapshot yet: serving 503 no_snapshot until one arrives', {
        workerId: this.deps.workerId,
      });
  }

  private startReporting(view: RuntimeView): void {
    this.reports.start(view);
  }

  /** SnapshotSource.stop (shutdown begins): no more snapshots; tell the controller we are draining. */
  private async stopPulling(): Promise<void> {
    this.beginDraining();
    this.clearFallback();
    // Neither the draining report nor the drain waits for the pull to close: a client that cannot reach
    // Pub/Sub may take far longer to close than Cloud Run's grace period. Its close is waited for (bounded)
    // after the final report, in stop().
    this.pullClosed = this.pull.close();
    this.reports.reportSoon();
  }

  /** Reporter.stop (after the drain): one last report and outcome flush, bounded, then everything stops. */
  private async stop(): Promise<void> {
    this.beginDraining();
    await this.registrationAnswered();
    await this.reports.finish(this.settings.finalReportTimeoutMs);
    this.abort.abort();
    this.clearFallback();
    const closing = [this.pullClosed, this.pull.close()].filter((p) => p !== undefined);
    await this.closeBounded(closing.length ? Promise.all(closing).then(() => {}) : undefined);
  }

  private beginDraining(): void {
    this.draining = true;
    this.drainingSince ??= this.now();
  }

  /**
   * A register call in flight when shutdown began (SIGTERM during start-up, while registering again, or an
   * offer of the highest protocol) is waited for until shutdownRegisterWaitMs after shutdown began:
   * granted, it is the session the final draining report goes on. Counted from the start of the shutdown,
   * it runs alongside the drain.
   */
  private async registrationAnswered(): Promise<void> {
    const calls = [this.registration.inFlight, this.upgrade.inFlight].filter((c) => c !== null);
    if (!calls.length) return;
    const call = Promise.all(calls);
    const waitMs = Math.max(0, this.drainingSince! + this.settings.shutdownRegisterWaitMs - this.now());
    const bound = new AbortController();
    const timedOut = sleep(waitMs, bound.signal).then(() => !bound.signal.aborted);
    const late = await Promise.race([call.then(() => false), timedOut]);
    bound.abort();
    if (late)
      this.deps.log.warn('register call still unanswered at shutdown: going on without its session', {
        workerId: this.deps.workerId,
        waitedMs: waitMs,
      });
  }

  private async closeBounded(closed: Promise<void> | undefined): Promise<void> {
    if (!closed) return;
    const bound = new AbortController();
    const timedOut = sleep(this.settings.pullCloseTimeoutMs, bound.signal).then(() => !bound.signal.aborted);
    const late = await Promise.race([closed.then(() => false), timedOut]);
    bound.abort();
    if (late)
      this.deps.log.warn('snapshot pull did not close in time: going on with the shutdown', {
        workerId: this.deps.workerId,
        waitedMs: this.settings.pullCloseTimeoutMs,
      });
  }

  /** Registration was refused for good (registration.ts): start() fails and the process should exit. */
  failFatally(err: SessionFatalError): void {
    this.fatal = err;
    this.deps.log.error(err.message, { workerId: this.deps.workerId, kind: err.kind });
    this.abort.abort();
    this.firstApplied?.();
    this.deps.onFatal?.(err);
  }

  /** How long to wait after a refusal before the next try (refusals.ts). */
  delayFor(reaction: ControlReaction, answer: { retryAfterMs?: number }, backoff: Backoff): number {
    return retryDelay(reaction, answer, this.settings, this.random, backoff);
  }

  // ---- registration ------------------------------------------------------------------------------------

  /** A call answered that our session is gone: register again (once, whoever noticed first). */
  reregister(sessionId: string): void {
    if (this.session?.sessionId !== sessionId) return;
    // Shutting down, the worker registers no more (registration.ts): the lapsed session is kept for the
    // last word. The controller takes a draining, idle report on the worker's current session even past
    // its TTL and hands every proxy over at once (docs/gateway-control-plane.md § Runtime report);
    // dropped, the last word went nowhere and the proxies sat idle until the grant lapsed.
    if (this.draining) return;
    this.session = null;
    const livedMs = this.now() - this.grantedAt;
    if (livedMs >= this.settings.quickLossMs) {
      this.quickLosses = 0;
      this.quickLossBackoff.reset();
    } else this.quickLosses++;
    if (this.quickLosses < 2) {
      this.deps.log.warn('control session lost: registering again', {
        workerId: this.deps.workerId,
        sessionId,
      });
      void this.registration.kick();
      return;
    }
    // Sessions lost as soon as they are granted, again and again: most likely another process registers
    // with the same worker id (each registration supersedes the other's session), and registering at once
    // would only keep the two superseding each other, a snapshot pass for every new session.
    const delay = this.quickLossBackoff.next();
    this.deps.log.error(
      'control session lost again soon after it was granted: registering again after a backoff; is another process using this GATEWAY_WORKER_ID?',
      {
        event: 'gateway.session_churn',
        workerId: this.deps.workerId,
        sessionId,
        livedMs,
        lostInARow: this.quickLosses,
        retryInMs: delay,
      },
    );
    void sleep(delay, this.signal).then(() => {
      if (!this.session && !this.signal.aborted && !this.draining) void this.registration.kick();
    });
  }

  /**
   * The pull found no subscription (snapshot-pull.ts). The API makes a worker's subscription at
   * registration, so register again — the same live instance gets its session back — and then fetch the
   * latest full snapshot: whatever was published while the subscription was missing is lost. Until then
   * the worker would reopen a pull that cannot exist and go stale for good while its session, kept alive
   * by its reports, kept its proxies from every other worker.
   */
  subscriptionGone(): void {
    if (this.signal.aborted || this.draining) return;
    this.fetchAfterRegistration = true;
    if (!this.session) return; // registering already: it opens the pull, then fetches
    this.session = null;
    void this.registration.kick();
  }

  /** The controller granted a session (registration.ts): pull its subscription, then ACK or fetch. */
  onRegistered(r: RegisterResponseBody): void {
    if (r.sessionId !== this.lastSessionId) {
      // A new session starts with no ACK bound here (the controller may keep the one of this process across
      // a protocol change: the re-ACK of what is applied is then answered unchanged), its own report
      // sequences (contract § Runtime), and no backoff grown by the old one's refusals: the waits under way
      // end (the loops go round under it).
      this.lastSessionId = r.sessionId;
      this.ackBound = null;
      this.acks.newSession();
      this.fetching.newSession();
      this.reports.newSession();
    }
    this.session = { sessionId: r.sessionId, registration: r };
    this.epochFloor = r.ownershipEpoch;
    this.grantedAt = this.now();
    this.heardAt = this.grantedAt;
    this.deps.log.info('registered with the control plane', {
      event: 'gateway.registered',
      workerId: this.deps.workerId,
      sessionId: r.sessionId,
      protocolVersion: r.protocolVersion,
      resumed: r.resumed,
      ownershipEpoch: r.ownershipEpoch,
      maxStaleAgeSeconds: r.maxStaleAgeSeconds,
      subscription: r.snapshotSubscription,
    });
    this.sink?.setMaxStaleAge?.(r.maxStaleAgeSeconds * 1000);
    this.reports.setInterval(reportIntervalMs(r));
    if (this.draining) {
      // Granted after shutdown began (the register call was in flight): no pull, no snapshot, no upgrade;
      // only what the draining report needs — an ACK of what was applied, or none (reporting.ts).
      if (this.applied) this.acks.kick();
      this.reports.reportSoon();
      return;
    }
    this.pull.open(r.snapshotSubscription);
    // A fetch asked for while there was no session (a delta that did not apply, or a GET answered that
    // the session was gone) stopped there: nothing else would ask again, and a resumed session gets no
    // new snapshot from the controller.
    if (this.fetchAfterRegistration || this.fetching.pending) {
      this.fetchAfterRegistration = false;
      this.requestFull();
    }
    if (this.applied) this.acks.kick();
    else this.scheduleFallback();
    this.upgrade.granted(r.protocolVersion);
  }

  /** The controller accepted an ACK or a runtime report: the session lives another TTL (its clock). */
  heard(): void {
    this.heardAt = this.now();
  }

  /**
   * The report loop has nothing it may report on (no ACK bound: no snapshot applied yet, or its ACK refused
   * for good). Then no call of ours keeps the session alive, and none would tell us it lapsed — and the
   * snapshot function builds snapshots only for live sessions, so a session lost before its first snapshot
   * (the pass its registration asked for failed, and the next tick came after the TTL) would leave the
   * worker waiting for ever. Once a session TTL has passed since the controller last heard of it, fetch the
   * latest snapshot: a lapsed session is answered `session_expired` (register again), a live one brings
   * what there is. At most once per TTL.
   */
  probeUnreported(): void {
    const s = this.session;
    if (!s || this.draining || this.signal.aborted) return;
    const ttlMs = s.registration.sessionTtlSeconds * 1000;
    if (this.now() - this.heardAt <= ttlMs) return;
    this.heardAt = this.now();
    this.deps.log.info('nothing accepted on this session for its TTL: fetching the latest snapshot', {
      workerId: this.deps.workerId,
      sessionId: s.sessionId,
      applied: this.applied?.version ?? null,
    });
    this.requestFull();
  }

  /**
   * Each report round: nothing on the pull for half the max stale age fetches the latest snapshot; a pull
   * open but silent for the whole of it is reopened (snapshot-pull.ts).
   */
  watchPull(): void {
    const s = this.session;
    if (!s || this.draining || this.signal.aborted) return;
    const maxStaleMs = s.registration.maxStaleAgeSeconds * 1000;
    this.pull.fetchIfQuiet(maxStaleMs / 2);
    this.pull.reopenIfSilent(maxStaleMs);
  }

  // ---- snapshots -----------------------------------------------------------------------------------------

  private async onMessage(m: FeedMessage) {
    if (this.signal.aborted || !this.sink) return 'nack' as const;
    this.pull.resetBackoff();
    // In slices (message.ts); the pull hands messages over one at a time, so a delta behind a large
    // snapshot still waits for it.
    const decoded = await runSliced(decodeSnapshotSlices(m, this.deps.workerId), this.deps.pause);
    if (decoded.kind === 'foreign') {
      // The emulator stores subscription filters without applying them (recipes §10).
      this.counters.foreign++;
      return 'ack' as const;
    }
    if (decoded.kind === 'poison') {
      this.counters.poison++;
      this.deps.log.warn('poison snapshot message dropped', {
        workerId: this.deps.workerId,
        messageId: m.id,
        reason: decoded.reason,
      });
      return 'ack' as const;
    }
    // Stopped while this was being decoded: left for the subscription's next reader, as at the top.
    if (this.signal.aborted) return 'nack' as const;
    const msg = decoded.message;
    if (this.refusedBelowFloor(msg.ownershipEpoch, msg.kind, msg.version)) return 'ack' as const;
    let result: ApplyResult;
    try {
      result = msg.kind === 'full' ? await this.sink.applySnapshot(msg) : await this.sink.applyDelta(msg);
    } catch (err) {
      this.counters.poison++;
      this.deps.log.error('snapshot could not be applied', { messageId: m.id, error: String(err) });
      return 'ack' as const;
    }
    this.onResult(result, msg.kind, msg.version);
    return 'ack' as const;
  }

  /**
   * Data of an epoch below the one the last registration reported is refused (contract §2), pulled or
   * fetched: a worker id's subscription keeps what an earlier process of it left unacknowledged — built
   * on grants that may have moved since — and the stored snapshot a fetch returns may be that one until
   * the pass its registration asked for has run; a process with nothing applied yet would take either
   * whatever its epoch. The floor outlives a re-registration's gap (no session meanwhile). Refused here,
   * it is counted and logged as any refusal; the new epoch's snapshot is on its way.
   */
  refusedBelowFloor(epoch: number, via: 'full' | 'delta' | 'fetch', version: number): boolean {
    if (epoch >= this.epochFloor) return false;
    this.onResult({ ok: false, reason: 'stale_epoch', needFullSnapshot: false }, via, version);
    return true;
  }

  /** What applying a snapshot (pulled or fetched) leads to: an ACK, or a fetch of the latest full one. */
  onResult(result: ApplyResult, via: 'full' | 'delta' | 'fetch', version: number): void {
    if (result.ok) {
      this.applied = result;
      this.pull.taken();
      this.fetching.satisfied(result);
      this.clearFallback();
      // The start wait ends on a snapshot with proxies in it, or on the second version: a new session is
      // given proxies only once it has ACKed a snapshot (plan-pass.ts assignable), so its first is empty,
      // and ending the wait there opened the listeners (Cloud Run routing traffic) to 503 no_upstream
      // until the next. A pool with nothing for it runs the wait out (startWaitMs), then serves.
      if (result.proxies > 0 || (this.firstVersion !== null && this.firstVersion !== result.version)) {
        this.firstApplied?.();
        this.firstApplied = null;
      }
      this.firstVersion ??= result.version;
      if (!isAcked(this.ackBound, result)) this.acks.kick();
      return;
    }
    this.counters.refused++;
    this.deps.log.info('snapshot refused', {
      workerId: this.deps.workerId,
      via,
      version,
      reason: result.reason,
      fetchingFull: result.needFullSnapshot,
    });
    if (result.needFullSnapshot) this.requestFull(via === 'delta' ? version : 0);
  }

  private scheduleFallback(): void {
    this.clearFallback();
    this.fallbackTimer = setTimeout(() => {
      this.fallbackTimer = null;
      if (!this.applied) this.requestFull();
    }, this.settings.firstSnapshotWaitMs);
    this.fallbackTimer.unref?.();
  }

  private clearFallback(): void {
    if (this.fallbackTimer) clearTimeout(this.fallbackTimer);
    this.fallbackTimer = null;
  }

  // ---- shared by the loops -------------------------------------------------------------------------------

  /**
   * Fetch the latest full snapshot (full-snapshot.ts): the pull cannot bring us up to date. `atLeast`: the
   * version of the delta that did not apply, which a snapshot applied meanwhile must reach to call it off.
   */
  requestFull(atLeast = 0): void {
    this.fetching.request(atLeast);
  }

  /** `retry`: the controller asked for an ACK (no_ack / ack_bound_mismatch): try even a refused one again. */
  kickAck(retry = false): void {
    this.acks.kick(retry);
  }

  /** Logged once per kind of refusal, then at most once per 30 s while it repeats (refusals.ts). */
  logRefusal(call: string, answer: Refusal, reaction: ControlReaction, retryInMs: number | null): void {
    this.refusals.record(call, answer, reaction, retryInMs);
  }

  /** ACKs and runtime reports one at a time, so a report never races an ACK that moves the bound. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.calls.then(work, work);
    this.calls = next.catch(() => undefined);
    return next;
  }
}

/**
 * Reports never further apart than their TTL (they would lapse in between), nor than half the session TTL
 * (reports keep the session alive: at the session TTL, every session would lapse just before its next
 * report, one late report would lose it), nor a minute; at most 1/s.
 */
export const MAX_REPORT_INTERVAL_MS = 60_000;
export function reportIntervalMs(
  r: Pick<RegisterResponseBody, 'reportIntervalSeconds' | 'reportTtlSeconds' | 'sessionTtlSeconds'>,
) {
  const ms = Math.min(r.reportIntervalSeconds, r.reportTtlSeconds, r.sessionTtlSeconds / 2) * 1000;
  return Math.max(1_000, Math.min(ms, MAX_REPORT_INTERVAL_MS));
}
