// The worker's session with the control plane (docs/gateway-control-plane.md; control-plane seed §2–§5,
// §7): register → streaming pull of its own subscription → validate, apply (the worker builds the
// immutable form and swaps one reference) → ACK; a delta that does not apply, or an ACK the controller
// does not recognise, is answered by fetching the latest full snapshot. Every call to the controller
// retries with bounded exponential backoff and jitter, reacting to the contract's stable codes
// (controlReaction). Runtime and outcome reports are in reporting.ts and share this session's state.
import { Backoff, type BackoffPolicy } from '../../../../shared/src/domain/gateway/backoff.js';
import {
  type ControlReaction,
  controlReaction,
} from '../../../../shared/src/domain/gateway/control-reaction.js';
import type { RegisterResponseBody } from '../../../../shared/src/messages/worker-api.js';
import type { Logger } from '../logger.js';
import type { Reporter, RuntimeView, SnapshotSink, SnapshotSource } from '../session.js';
import type { ApplyResult } from '../worker.js';
import type { ControlAnswer, ControlClient } from './client.js';
import type { FeedHandle, SnapshotFeed } from './feed.js';
import { KickLoop, sleep } from './loops.js';
import { decodeSnapshotMessage } from './message.js';
import { ReportLoop } from './reporting.js';

/**
 * The protocol versions this worker speaks (shared/src/domain/workers/protocol.ts). It offers the highest;
 * a control plane that does not speak it refuses, and the worker offers the next one down, so a gateway
 * may be deployed before or after the API. Refused at the lowest, it stops (contract §7: no silent
 * degradation below what it can do).
 */
export const WORKER_PROTOCOL_VERSION = 2;
export const WORKER_PROTOCOL_MIN = 1;
const REFUSAL_LOG_QUIET_MS = 30_000;

export interface SessionSettings {
  backoff: BackoffPolicy;
  /** 403 (a configuration error): retry this slowly (jittered like the rest). */
  slowRetryMs: number;
  /** Contract start-up order: nothing on the pull within this long → GET the latest snapshot. */
  firstSnapshotWaitMs: number;
  /** start() resolves at the first applied snapshot, or after this long without one. */
  startWaitMs: number;
  /** Until registration says otherwise. */
  reportIntervalMs: number;
  /** Bound on the last report and outcome flush at shutdown. */
  finalReportTimeoutMs: number;
  /** The controller allows 1 GET snapshot per second (burst 5). */
  minFetchIntervalMs: number;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = {
  backoff: { initialMs: 500, maxMs: 30_000 },
  slowRetryMs: 60_000,
  firstSnapshotWaitMs: 3_000,
  startWaitMs: 15_000,
  reportIntervalMs: 5_000,
  finalReportTimeoutMs: 2_000,
  minFetchIntervalMs: 1_000,
};

export interface SessionDeps {
  client: ControlClient;
  feed: SnapshotFeed;
  log: Logger;
  workerId: string;
  instanceId: string;
  zone: string;
  settings?: Partial<SessionSettings>;
  random?: () => number;
  now?: () => number;
  /** A failure no retry can fix (the controller refuses our protocol): the process should exit. */
  onFatal?: (err: SessionFatalError) => void;
}

export class SessionFatalError extends Error {
  readonly kind = 'session_fatal';
}

export interface SessionState {
  sessionId: string;
  registration: RegisterResponseBody;
}

type Applied = Extract<ApplyResult, { ok: true }>;

export class ControllerSession {
  readonly settings: SessionSettings;
  readonly source: SnapshotSource;
  readonly reporter: Reporter;
  /** The current session, null while (re-)registering. */
  session: SessionState | null = null;
  /** The last snapshot the worker applied (full, delta or fetched). */
  applied: Applied | null = null;
  /** The controller's ACK bound for this session: what runtime reports sit on. */
  ackBound: { version: number; epoch: number } | null = null;
  /** Set once stop() began: the next reports say `draining: true`. */
  draining = false;
  readonly counters = { foreign: 0, poison: 0, refused: 0, fetched: 0 };

  private sink: SnapshotSink | null = null;
  private feed: { handle: FeedHandle; subscription: string } | null = null;
  private readonly abort = new AbortController();
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly registering: KickLoop;
  private readonly acking: KickLoop;
  private readonly fetching: KickLoop;
  private readonly feedBackoff: Backoff;
  private readonly reports: ReportLoop;
  private lastSessionId: string | null = null;
  private wantFull = false;
  private resyncedFor: number | null = null;
  /** The applied snapshot whose ACK the controller refused for good ("wait for the next snapshot"). */
  private ackGaveUp: Applied | null = null;
  private lastFetchAt = Number.NEGATIVE_INFINITY;
  private firstApplied: (() => void) | null = null;
  private fatal: SessionFatalError | null = null;
  private messages: Promise<unknown> = Promise.resolve();
  private fallbackTimer: NodeJS.Timeout | null = null;
  private readonly refusalLog = new Map<string, { at: number; suppressed: number }>();
  private calls: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: SessionDeps) {
    this.settings = { ...DEFAULT_SESSION_SETTINGS, ...deps.settings };
    this.random = deps.random ?? Math.random;
    this.now = deps.now ?? Date.now;
    const onError = (what: string) => (err: unknown) =>
      deps.log.error(`control session: ${what} failed`, { error: String(err) });
    this.registering = new KickLoop(() => this.registerUntilDone(), onError('registration'));
    this.acking = new KickLoop(() => this.ackUntilDone(), onError('ACK'));
    this.fetching = new KickLoop(() => this.fetchUntilDone(), onError('snapshot fetch'));
    this.feedBackoff = new Backoff(this.settings.backoff, this.random);
    this.reports = new ReportLoop(this, deps, this.settings);
    this.source = { start: (sink) => this.start(sink), stop: () => this.stopPulling() };
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

  private async start(sink: SnapshotSink): Promise<void> {
    this.sink = sink;
    const first = new Promise<void>((resolve) => {
      this.firstApplied = resolve;
    });
    void this.registering.kick();
    const waited = new AbortController();
    const onStop = () => waited.abort();
    this.signal.addEventListener('abort', onStop, { once: true });
    await Promise.race([first, sleep(this.settings.startWaitMs, waited.signal)]);
    waited.abort();
    this.signal.removeEventListener('abort', onStop);
    if (this.fatal) throw this.fatal;
    if (!this.applied)
      this.deps.log.warn('no snapshot yet: serving 503 no_snapshot until one arrives', {
        workerId: this.deps.workerId,
      });
  }

  private startReporting(view: RuntimeView): void {
    this.reports.start(view);
  }

  /** SnapshotSource.stop (shutdown begins): no more snapshots; tell the controller we are draining. */
  private async stopPulling(): Promise<void> {
    this.draining = true;
    this.clearFallback();
    const feed = this.feed;
    this.feed = null;
    await feed?.handle.close().catch(() => {});
    this.reports.reportSoon();
  }

  /** Reporter.stop (after the drain): one last report and outcome flush, bounded, then everything stops. */
  private async stop(): Promise<void> {
    this.draining = true;
    await this.reports.finish(this.settings.finalReportTimeoutMs);
    this.abort.abort();
    this.clearFallback();
    const feed = this.feed;
    this.feed = null;
    await feed?.handle.close().catch(() => {});
  }

  private failFatally(err: SessionFatalError): void {
    this.fatal = err;
    this.deps.log.error(err.message, { workerId: this.deps.workerId, kind: err.kind });
    this.abort.abort();
    this.firstApplied?.();
    this.deps.onFatal?.(err);
  }

  /** How long to wait after a refusal; null for reactions that are not retried here. */
  delayFor(reaction: ControlReaction, answer: { retryAfterMs?: number }, backoff: Backoff): number {
    if (reaction === 'rate_limited' && answer.retryAfterMs !== undefined)
      return Math.max(answer.retryAfterMs, this.settings.backoff.initialMs);
    if (reaction === 'retry_slowly') return Math.round(this.settings.slowRetryMs * (0.5 + this.random() / 2));
    return backoff.next();
  }

  // ---- registration ------------------------------------------------------------------------------------

  /** A call answered that our session is gone: register again (once, whoever noticed first). */
  reregister(sessionId: string): void {
    if (this.session?.sessionId !== sessionId) return;
    this.deps.log.warn('control session lost: registering again', {
      workerId: this.deps.workerId,
      sessionId,
    });
    this.session = null;
    void this.registering.kick();
  }

  private async registerUntilDone(): Promise<void> {
    const backoff = new Backoff(this.settings.backoff, this.random);
    let offered = WORKER_PROTOCOL_VERSION;
    while (!this.session && !this.signal.aborted && !this.draining) {
      const answer = await this.deps.client.register({
        workerId: this.deps.workerId,
        instanceId: this.deps.instanceId,
        zone: this.deps.zone,
        supportedProtocolVersion: offered,
      });
      if (answer.ok) {
        this.onRegistered(answer.body);
        return;
      }
      if (answer.code === 'unsupported_protocol_version' && offered > WORKER_PROTOCOL_MIN) {
        this.deps.log.info('control plane does not speak this protocol; offering the one below', {
          workerId: this.deps.workerId,
          refused: offered,
          offering: offered - 1,
        });
        offered--;
        continue;
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'fatal') {
        this.failFatally(
          new SessionFatalError(`the control plane refused protocol ${offered}: ${answer.message}`),
        );
        return;
      }
      const delay = this.delayFor(reaction === 'drop' ? 'retry_slowly' : reaction, answer, backoff);
      this.logRefusal('register', answer, reaction, delay);
      await sleep(delay, this.signal);
    }
  }

  private onRegistered(r: RegisterResponseBody): void {
    if (r.sessionId !== this.lastSessionId) {
      // A new session starts with no ACK bound and its own report sequences (contract § Runtime).
      this.lastSessionId = r.sessionId;
      this.ackBound = null;
      this.resyncedFor = null;
      this.reports.newSession();
    }
    this.session = { sessionId: r.sessionId, registration: r };
    this.deps.log.info('registered with the control plane', {
      event: 'gateway.registered',
      workerId: this.deps.workerId,
      sessionId: r.sessionId,
      resumed: r.resumed,
      ownershipEpoch: r.ownershipEpoch,
      maxStaleAgeSeconds: r.maxStaleAgeSeconds,
      subscription: r.snapshotSubscription,
    });
    this.sink?.setMaxStaleAge?.(r.maxStaleAgeSeconds * 1000);
    this.reports.setInterval(r.reportIntervalSeconds * 1000);
    this.openFeed(r.snapshotSubscription);
    if (this.applied) void this.acking.kick();
    else this.scheduleFallback();
  }

  // ---- the streaming pull ------------------------------------------------------------------------------

  private openFeed(subscription: string): void {
    if (this.feed?.subscription === subscription || this.draining || this.signal.aborted) return;
    const old = this.feed;
    this.feed = null;
    void old?.handle.close().catch(() => {});
    const handle = this.deps.feed.open(
      subscription,
      (m) => {
        const run = this.messages.then(() => this.onMessage(m));
        this.messages = run.catch(() => undefined);
        return run;
      },
      (err) => {
        if (this.feed?.handle !== handle) return;
        this.feed = null;
        const delay = this.feedBackoff.next();
        this.deps.log.warn('snapshot pull ended: reopening', {
          workerId: this.deps.workerId,
          error: err ? String(err) : undefined,
          retryInMs: delay,
        });
        void sleep(delay, this.signal).then(() => {
          const s = this.session;
          if (s) this.openFeed(s.registration.snapshotSubscription);
        });
      },
    );
    this.feed = { handle, subscription };
  }

  private async onMessage(m: { id: string; attributes: Readonly<Record<string, string>>; data: Buffer }) {
    if (this.signal.aborted || !this.sink) return 'nack' as const;
    this.feedBackoff.reset();
    const decoded = decodeSnapshotMessage(m, this.deps.workerId);
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
    const msg = decoded.message;
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

  private onResult(result: ApplyResult, via: 'full' | 'delta' | 'fetch', version: number): void {
    if (result.ok) {
      this.applied = result;
      this.wantFull = false;
      this.clearFallback();
      this.firstApplied?.();
      this.firstApplied = null;
      const b = this.ackBound;
      if (!b || b.version !== result.version || b.epoch !== result.ownershipEpoch) void this.acking.kick();
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
    if (result.needFullSnapshot) this.requestFull();
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

  // ---- the latest full snapshot ------------------------------------------------------------------------

  requestFull(): void {
    this.wantFull = true;
    void this.fetching.kick();
  }

  private async fetchUntilDone(): Promise<void> {
    const backoff = new Backoff(this.settings.backoff, this.random);
    while (this.wantFull && !this.signal.aborted && !this.draining) {
      const s = this.session;
      if (!s) return; // registration resynchronises when it is done
      const wait = this.lastFetchAt + this.settings.minFetchIntervalMs - this.now();
      if (wait > 0) await sleep(wait, this.signal);
      this.lastFetchAt = this.now();
      const answer = await this.deps.client.latestSnapshot(this.deps.workerId, s.sessionId);
      if (answer.ok) {
        this.counters.fetched++;
        this.wantFull = false;
        // A full snapshot never asks for another one: refused, it is logged and we wait for the next.
        this.onResult(await this.sink!.applySnapshot(answer.body), 'fetch', answer.body.version);
        return;
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'no_snapshot' || reaction === 'drop' || reaction === 'await_snapshot') {
        this.logRefusal('snapshot', answer, reaction, null);
        this.wantFull = false;
        return;
      }
      if (reaction === 'reregister') {
        this.reregister(s.sessionId);
        return;
      }
      const delay = this.delayFor(reaction, answer, backoff);
      this.logRefusal('snapshot', answer, reaction, delay);
      await sleep(delay, this.signal);
    }
  }

  // ---- ACK -----------------------------------------------------------------------------------------------

  private async ackUntilDone(): Promise<void> {
    const backoff = new Backoff(this.settings.backoff, this.random);
    for (;;) {
      const s = this.session;
      const a = this.applied;
      if (!s || !a || this.signal.aborted) return;
      const b = this.ackBound;
      if (b && b.version === a.version && b.epoch === a.ownershipEpoch) return;
      if (this.ackGaveUp === a) return;
      const answer = await this.exclusive(() =>
        this.deps.client.ack(this.deps.workerId, {
          sessionId: s.sessionId,
          version: a.version,
          epoch: a.ownershipEpoch,
          checksum: a.checksum,
        }),
      );
      if (answer.ok) {
        backoff.reset();
        if (this.session?.sessionId === s.sessionId) {
          this.ackBound = { version: answer.body.acceptedVersion, epoch: answer.body.acceptedEpoch };
          this.reports.reportSoon();
        }
        continue; // a newer snapshot may have been applied meanwhile
      }
      const reaction = controlReaction(answer.status, answer.code);
      if (reaction === 'resync') {
        // Fetch once per version: the same refusal again means the controller no longer knows it.
        if (this.resyncedFor !== a.version) {
          this.resyncedFor = a.version;
          this.logRefusal('ack', answer, reaction, null);
          this.requestFull();
        } else {
          this.logRefusal('ack', answer, 'await_snapshot', null);
          this.ackGaveUp = a;
        }
        return;
      }
      if (reaction === 'reregister') {
        this.reregister(s.sessionId);
        return;
      }
      if (reaction === 'await_snapshot' || reaction === 'drop' || reaction === 'fatal') {
        this.logRefusal('ack', answer, reaction, null);
        this.ackGaveUp = a;
        return;
      }
      const delay = this.delayFor(reaction, answer, backoff);
      this.logRefusal('ack', answer, reaction, delay);
      await sleep(delay, this.signal);
    }
  }

  /** `retry`: the controller asked for an ACK (no_ack / ack_bound_mismatch): try even a refused one again. */
  kickAck(retry = false): void {
    if (retry) this.ackGaveUp = null;
    void this.acking.kick();
  }

  /**
   * One line per kind of refusal, then at most one per `quietMs` while it repeats (with how many were
   * left out): a control plane that is down for minutes must not flood the log.
   */
  logRefusal(
    call: string,
    answer: Extract<ControlAnswer<unknown>, { ok: false }>,
    reaction: ControlReaction,
    retryInMs: number | null,
  ): void {
    const key = `${call}|${answer.status}|${answer.code ?? ''}`;
    const now = this.now();
    const seen = this.refusalLog.get(key);
    if (seen && now - seen.at < REFUSAL_LOG_QUIET_MS) {
      seen.suppressed++;
      return;
    }
    this.refusalLog.set(key, { at: now, suppressed: 0 });
    const quiet = ['await_snapshot', 'no_snapshot', 'rate_limited', 'ack_first'].includes(reaction);
    const loud = reaction === 'retry_slowly' || reaction === 'drop' || reaction === 'fatal';
    const level = loud ? 'error' : quiet ? 'info' : 'warn';
    this.deps.log[level](`control plane refused ${call}`, {
      workerId: this.deps.workerId,
      status: answer.status,
      code: answer.code,
      reaction,
      retryInMs: retryInMs ?? undefined,
      detail: answer.message,
      suppressedSinceLast: seen?.suppressed,
    });
  }

  /** ACKs and runtime reports one at a time, so a report never races an ACK that moves the bound. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.calls.then(work, work);
    this.calls = next.catch(() => undefined);
    return next;
  }
}
