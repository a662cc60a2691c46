// The streaming pull of the worker's own snapshot subscription (docs/gateway.md § Controller session,
// Pull): at most one open, on the subscription the current registration names; its messages handled
// one at a time, in order (each waits for the one before), so snapshots apply in the order they came; a
// pull the client library gives up on is reopened with backoff, and so is one that stays open but brings
// nothing for the max stale age (a stream that stopped delivering without an error: reopenIfSilent). What a
// message means is the session's business (ControllerSession.onMessage).
import { Backoff } from '../../../../shared/src/domain/gateway/backoff.js';
import type { FeedHandle, FeedMessage, FeedVerdict } from './feed.js';
import { sleep } from './loops.js';
import type { ControllerSession } from './session.js';
import type { SessionDeps, SessionSettings } from './session-settings.js';

export class SnapshotPull {
  private feed: { handle: FeedHandle; subscription: string } | null = null;
  private messages: Promise<unknown> = Promise.resolve();
  private readonly backoff: Backoff;
  /** When the pull was opened or last brought a message (monotonic). */
  private heardAt = 0;
  /**
   * When a snapshot was last taken — pulled or fetched, a duplicate of what runs included — or the session
   * began (monotonic): reopening does not move it, nor does a message that brought nothing usable (poison,
   * refused, another worker's on the emulator), or a pull delivering only those would never fetch.
   */
  private takenAt: number;
  private quietFetchAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly session: ControllerSession,
    private readonly deps: SessionDeps,
    settings: SessionSettings,
    random: () => number,
    private readonly now: () => number,
    private readonly handle: (m: FeedMessage) => Promise<FeedVerdict>,
  ) {
    this.backoff = new Backoff(settings.backoff, random);
    this.takenAt = now();
  }

  /** Pulls `subscription`, closing a pull of another one; a no-op once shutdown began. */
  open(subscription: string): void {
    const session = this.session;
    if (this.feed?.subscription === subscription || session.draining || session.signal.aborted) return;
    const old = this.feed;
    this.feed = null;
    void old?.handle.close().catch(() => {});
    const handle = this.deps.feed.open(
      subscription,
      (m) => {
        this.heardAt = this.now();
        const run = this.messages.then(() => this.handle(m));
        this.messages = run.catch(() => undefined);
        return run;
      },
      (err) => {
        if (this.feed?.handle !== handle) return;
        this.feed = null;
        const delay = this.backoff.next();
        const gone = subscriptionGone(err);
        this.deps.log.warn(
          gone
            ? 'snapshot subscription not found: registering again (the control plane makes it)'
            : 'snapshot pull ended: reopening',
          { workerId: this.deps.workerId, error: err ? String(err) : undefined, retryInMs: delay },
        );
        void sleep(delay, session.signal).then(() => {
          // Reopening a subscription that does not exist fails the same way for ever; only registration
          // makes it again (docs/gateway-control-plane.md § Snapshots on Pub/Sub).
          if (gone) return session.subscriptionGone();
          const s = session.session;
          if (s) this.open(s.registration.snapshotSubscription);
        });
      },
    );
    this.feed = { handle, subscription };
    this.heardAt = this.now();
  }

  /**
   * Open, but nothing for `silentMs`: every live worker gets a renewed snapshot at every tick, so this is a
   * controller away or a stream that stopped delivering without closing — a known failure of streaming
   * pulls, which no error would ever reopen while the worker's reports kept its session and its proxies.
   * Reopened (harmless if the controller was the one away), at most once per `silentMs`.
   */
  reopenIfSilent(silentMs: number): void {
    const feed = this.feed;
    const session = this.session;
    if (!feed || session.draining || session.signal.aborted) return;
    const silentFor = this.now() - this.heardAt;
    if (silentFor <= silentMs) return;
    this.deps.log.warn('snapshot pull silent for the max stale age: reopening it', {
      workerId: this.deps.workerId,
      silentMs: Math.round(silentFor),
    });
    this.feed = null;
    void feed.handle.close().catch(() => {});
    this.open(feed.subscription);
  }

  /**
   * No snapshot taken for `quietMs` (half the max stale age), whether the pull is open, wedged, failing to
   * open or bringing only messages that cannot be used: the latest snapshot is fetched (GET), at most once
   * per `quietMs`. The controller stores each
   * version before it publishes it, so a worker whose Pub/Sub delivery fails — a stream that stopped, a
   * subscription refused, a snapshot too many bytes to publish — still gets it before it goes stale, rather
   * than serve 503 while its reports keep its session and its proxies. Not one past the wire schema's
   * MAX_SNAPSHOT_PROXIES: the fetched one is checked against the same schema and refused; the controller
   * never gives a worker more (shared/src/domain/snapshots/share-cap.ts).
   */
  fetchIfQuiet(quietMs: number): void {
    const session = this.session;
    if (session.draining || session.signal.aborted) return;
    const now = this.now();
    if (now - this.takenAt <= quietMs || now - this.quietFetchAt <= quietMs) return;
    this.quietFetchAt = now;
    this.deps.log.info('no snapshot taken for half the max stale age: fetching the latest', {
      workerId: this.deps.workerId,
      quietMs: Math.round(now - this.takenAt),
    });
    session.requestFull();
  }

  /** A snapshot was taken (applied, or a duplicate of what runs): the quiet is counted from now. */
  taken(): void {
    this.takenAt = this.now();
  }

  /** Stops pulling (settles when the pull is closed; a failure to close is no concern at shutdown). */
  close(): Promise<void> | undefined {
    const feed = this.feed;
    this.feed = null;
    return feed?.handle.close().catch(() => {});
  }

  /** A message arrived: the pull works, so its next failure waits from the first step again. */
  resetBackoff(): void {
    this.backoff.reset();
  }
}

/** gRPC NOT_FOUND (5): the subscription was deleted (by hand, or by Pub/Sub after a day without use). */
export const subscriptionGone = (err: Error | undefined): boolean =>
  (err as { code?: unknown } | undefined)?.code === 5;
