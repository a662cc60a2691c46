// What a controller session (session.ts) is tuned by and built from: its timings, its collaborators
// (the control client, the snapshot feed, the worker's identity) and the one error it cannot retry.
import type { BackoffPolicy } from '../../../../shared/src/domain/gateway/backoff.js';
import type { RegisterResponseBody } from '../../../../shared/src/messages/worker-api.js';
import type { Logger } from '../logger.js';
import type { Pause } from '../slices.js';
import type { ApplyResult } from '../worker.js';
import type { ControlClient } from './client.js';
import type { SnapshotFeed } from './feed.js';

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
  /**
   * An outcome older than this (or than 3 report intervals, whichever is longer) is dropped unsent
   * (reporting.ts): the API stamps a batch with the time it stores it, so outcomes held through an outage
   * would reach the probe's passive track (one window a minute) as fresh evidence.
   */
  outcomeMaxAgeMs: number;
  /** Bound on the last report and outcome flush at shutdown. */
  finalReportTimeoutMs: number;
  /**
   * A register call in flight at shutdown is waited for until this long after shutdown began (alongside
   * the drain, so within GATEWAY_DRAIN_TIMEOUT_MS by default): its session carries the draining report.
   */
  shutdownRegisterWaitMs: number;
  /**
   * Bound on closing the pull at shutdown: the Pub/Sub client's close() waits for its ack flush (up to
   * an hour by default), and Cloud Run kills the process 10 s after SIGTERM.
   */
  pullCloseTimeoutMs: number;
  /** The controller allows 1 GET snapshot per second (burst 5). */
  minFetchIntervalMs: number;
  /** Granted a lower protocol than our highest: offer the highest again this often (protocol-upgrade.ts). */
  protocolUpgradeRetryMs: number;
  /**
   * A session lost sooner than this after it was granted, twice running, is not a blip: re-register only
   * after a growing backoff (session.ts reregister).
   */
  quickLossMs: number;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = {
  backoff: { initialMs: 500, maxMs: 30_000 },
  slowRetryMs: 60_000,
  firstSnapshotWaitMs: 3_000,
  startWaitMs: 15_000,
  reportIntervalMs: 5_000,
  outcomeMaxAgeMs: 60_000,
  finalReportTimeoutMs: 2_000,
  shutdownRegisterWaitMs: 4_000,
  pullCloseTimeoutMs: 1_000,
  minFetchIntervalMs: 1_000,
  protocolUpgradeRetryMs: 600_000,
  quickLossMs: 30_000,
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
  /** The wall clock: what goes on the wire (observedAt) and /healthz. Date.now by default. */
  now?: () => number;
  /**
   * A monotonic clock (any origin) for every wait between calls (fetch spacing, Retry-After, log
   * quieting, how long a session lived), so a wall-clock step neither stretches nor skips them.
   * Production passes performance.now. Required: defaulted to `now`, a construction that left it out
   * compiled and timed every backoff on the wall clock, which a step back an hour held for that hour.
   */
  monotonicNow: () => number;
  /** A failure no retry can fix (the controller refuses our protocol): the process should exit. */
  onFatal?: (err: SessionFatalError) => void;
  /** Between two slices of decoding a pulled message (../slices.ts): default, a turn of the event loop. */
  pause?: Pause;
}

export class SessionFatalError extends Error {
  readonly kind = 'session_fatal';
}

export interface SessionState {
  sessionId: string;
  registration: RegisterResponseBody;
}

/** A snapshot the worker applied: what ACKs and runtime reports are about. */
export type Applied = Extract<ApplyResult, { ok: true }>;
