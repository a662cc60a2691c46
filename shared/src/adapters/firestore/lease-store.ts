// FirestoreLeaseStore: the seed's in-memory lease store (§7, "one lock: select+insert") made durable and
// shared by any number of replicas. Each proxy's active entries live in leaseState/{proxy}; every change
// to them is one batched write of that document — guarded by a lastUpdateTime precondition on the state
// it was computed from — together with the lease document (lease-state-access.ts). So a grant can only
// commit against the latest state, and capacity is checked against exactly that state: no proxy is ever
// over capacity, whatever the concurrency. Preconditioned writes rather than transactions, because the
// emulator's pessimistic locks stall contending transactions for seconds
// (../shared/design/gcp-offline-recipes.md §7); both are valid in production.
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import type { Usage } from '../../domain/leases/capacity.js';
import type { ProxyInstance } from '../../domain/leases/instance.js';
import type { Cooldown, Lease, LeaseSettings } from '../../domain/leases/model.js';
import type { Clock } from '../../ports/clock.js';
import {
  type CooldownStart,
  type GrantOutcome,
  type GrantRequest,
  type KeyDrop,
  type KeyVersion,
  type LeaseStore,
  LeaseStoreError,
  type LeaseVersion,
  type RenewOutcome,
  type ReportedLease,
  type StoredKey,
} from '../../ports/lease-store.js';
import { withDeadline } from '../deadline.js';
import { Latch } from '../latch.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { LeaseCooldownCache } from './lease-cooldown-cache.js';
import { type CooldownWriteDeps, writeCooldown } from './lease-cooldown-write.js';
import { type LocatedLease, locateLease } from './lease-document.js';
import { type GrantDeps, grantLease } from './lease-grant.js';
import { KeyedLock, PendingCounter } from './lease-keyed-lock.js';
import { LeaseKeys } from './lease-keys.js';
import { type CollectionListener, listenCollection } from './lease-listener.js';
import { type ReleaseDeps, releaseLease } from './lease-release.js';
import { type RenewalDeps, renewLease } from './lease-renewal.js';
import { guard, LeaseStateAccess } from './lease-state-access.js';
import { LeaseStateCache } from './lease-state-cache.js';
import { LockWaitError } from './lease-write-turn.js';

export interface FirestoreLeaseStoreOptions {
  /** The wall clock: stored lease times (grants, expiries, cooldowns) and the time leases are judged at. */
  clock: Clock;
  /**
   * Milliseconds on a monotonic clock for what the store times in-process, as an age: how old its view
   * of a proxy is (staleAfterMs), its read of every lease state (LOAD_RETRY_MS, LOAD_PENDING_MS) and the
   * interval of its cooldown view's sweeps (COOLDOWN_PRUNE_EVERY_MS). On the wall clock, one stepped back
   * an hour made every such age negative for that hour: no view was read again (proxies other replicas
   * freed stayed full here: 409s), a failed start-up read was never retried (503s after Firestore was
   * back), and ended cooldowns were not swept from memory. The API's wiring passes performance.now
   * (buildLeaseApi); tests pass their ManualClock's time, whose steps stand for elapsed time. Required, no
   * default: `clock` is the wall clock in production, and a default of its time let a caller that left
   * this option out bring the frozen ages back, unnoticed by compiler and tests.
   */
  monotonicNow: () => number;
  settings: LeaseSettings;
  log?: Logger;
  /** Commits one request may attempt before answering "contended" (each retry re-reads the state). */
  maxCommits?: number;
  /** How old this replica's view of a proxy may be and still be trusted to say "full" (default 1 s). */
  staleAfterMs?: number;
  /** How long a write waits for its turn on a proxy's lock (default LOCK_WAIT_MS). */
  lockWaitMs?: number;
}

/** How soon after a failed read of every lease state a request may start the next one. */
export const LOAD_RETRY_MS = 1_000;
/**
 * How long a write waits for its turn on its proxy's lock before it answers 503 unavailable (a grant, over
 * all its candidates: it passes over those still queued and tries the next). Each call under
 * the lock is bounded (STORE_CALL_DEADLINE_MS), the wait was not: behind a stalled Firestore the k-th
 * request answered after k deadlines, up to Cloud Run's 300 s. Not the call's 5 s: a hot proxy's honest
 * queue (a holder reads, then commits up to 16 times with backoff on conflicts) outgrew that under load,
 * and 600 crawlers on 20 proxies got 503s from a healthy store (test/invariants/leases-capacity.test.ts).
 */
export const LOCK_WAIT_MS = 30_000;

/**
 * How long a read of every lease state may stay unanswered before a request starts another. Younger, it
 * is waited on again rather than read anew: a degraded Firestore slower than ready()'s wait got a new
 * full read from every request and none was ever waited for to the end. Older, it is likelier lost than
 * slow (the client's own deadline is 300 s), and a new one gives the replica another chance.
 */
export const LOAD_PENDING_MS = 60_000;

/** A read of every lease state, unanswered since `startedAt` (monotonic ms). */
interface LoadingRead {
  read: Promise<void>;
  /** What requests wait on: the read's outcome, without a reaction on it per request (latch.ts). */
  settled: Latch;
  startedAt: number;
}

/**
 * How often the cooldown listener subscribes again, to take the time of its filter anew: the Firestore
 * client keeps what the old filter matched (a day of ended cooldowns, until TTL) only until then.
 */
export const COOLDOWN_LISTENER_RENEW_MS = 60 * 60 * 1000;

export class FirestoreLeaseStore implements LeaseStore {
  private readonly clock: Clock;
  private readonly monotonicNow: () => number;
  private readonly settings: LeaseSettings;
  private readonly log: Logger;
  private readonly state: LeaseStateCache;
  private readonly access: LeaseStateAccess;
  private readonly cooldowns: LeaseCooldownCache;
  private readonly lock = new KeyedLock();
  /** This replica's cooldown writes, one lease at a time (startCooldown). */
  private readonly leaseLock = new KeyedLock();
  private readonly inFlight = new PendingCounter();
  private listener: CollectionListener | null = null;
  /** The newest read of every lease state (null: it failed). */
  private loading: LoadingRead | null = null;
  /** Whether a read of every lease state has landed — any one: each puts all it read in the cache. */
  private loaded = false;
  /** Resolved when one has. */
  private readonly landed = new Latch();
  private loadFailedAt = Number.NEGATIVE_INFINITY;
  private readonly staleAfterMs: number;
  private readonly lockWaitMs: number;
  private readonly maxCommits: number;
  private readonly keys: LeaseKeys;
  /** What the parts in lease-grant/-renewal/-release/-cooldown-write.ts use of this store. */
  private readonly parts: GrantDeps & RenewalDeps & ReleaseDeps & CooldownWriteDeps;

  constructor(
    private readonly db: Firestore,
    opts: FirestoreLeaseStoreOptions,
  ) {
    const { clock } = opts;
    this.clock = clock;
    this.monotonicNow = opts.monotonicNow;
    this.settings = opts.settings;
    this.log = opts.log ?? jsonLogger({ component: 'lease-store' });
    this.state = new LeaseStateCache(this.log, {
      monotonicNow: this.monotonicNow,
      wallNow: () => clock.now().getTime(),
    });
    this.maxCommits = opts.maxCommits ?? 16;
    this.access = new LeaseStateAccess(db, this.state, this.monotonicNow, this.log, this.maxCommits);
    this.cooldowns = new LeaseCooldownCache(this.log, {
      monotonicNow: this.monotonicNow,
      wallNow: () => clock.now().getTime(),
    });
    this.staleAfterMs = opts.staleAfterMs ?? 1000;
    this.lockWaitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
    this.keys = new LeaseKeys(db, this.clock, this.log);
    this.parts = {
      db,
      clock: this.clock,
      settings: this.settings,
      log: this.log,
      state: this.state,
      access: this.access,
      cooldowns: this.cooldowns,
      inFlight: this.inFlight,
      keys: this.keys,
      maxCommits: this.maxCommits,
      staleAfterMs: this.staleAfterMs,
      lockWaitMs: this.lockWaitMs,
      locate: (leaseId) => this.locate(leaseId),
      find: (leaseId) => this.find(leaseId),
      writing: (proxy, fn, waitMs) => this.writing(proxy, fn, waitMs),
    };
  }

  /**
   * Loads the lease states once and starts the cooldown listener (cooldowns change rarely). The listener
   * loads only the cooldowns still running at its (re)subscription: TTL deletes an expired one up to a
   * day late, and at crawler volumes a day of expired (proxy, target) pairs is most of the collection —
   * reads at every replica start, and memory, for cooldowns that can no longer steer anything. The filter's
   * time is the subscription's: a cooldown that ends later stays in the Firestore client's listener state
   * (not in the view, which drops it) until TTL deletes it or the listener re-subscribes — which it does
   * every COOLDOWN_LISTENER_RENEW_MS (one read per running cooldown each time).
   */
  start(): this {
    if (this.listener) return this;
    const { cooldowns } = LEASE_COLLECTIONS;
    const running = () =>
      this.db.collection(cooldowns).where('until', '>', Timestamp.fromDate(this.clock.now()));
    this.listener = listenCollection(running, this.cooldowns, {
      name: cooldowns,
      log: this.log,
      renewEveryMs: COOLDOWN_LISTENER_RENEW_MS,
    });
    this.load();
    return this;
  }

  /**
   * One read of every lease state. A failed read is not remembered: the next ready() reads again (at most
   * once per second), so a Firestore hiccup at start-up (IAM still propagating, the emulator up late) costs
   * a few 503s, not a replica that answers 503 until it restarts. One that lands late still counts, even
   * after a newer read replaced it: a degraded Firestore slower than ready()'s wait still makes the
   * replica ready.
   */
  private load(): LoadingRead {
    const read = this.access.loadAll();
    const loading: LoadingRead = {
      read,
      settled: Latch.following(read),
      startedAt: this.monotonicNow(),
    };
    this.loading = loading;
    read.then(
      () => {
        this.loaded = true;
        this.landed.resolve();
      },
      (err: unknown) => this.loadFailed(loading, err),
    );
    return loading;
  }

  /** Forgets a read of every lease state that failed, unless a later one replaced it. */
  private loadFailed(loading: LoadingRead, err: unknown): void {
    if (this.loading !== loading) return;
    this.log.error('loading lease states failed; the next request reads them again', { error: err });
    this.loading = null;
    this.loadFailedAt = this.monotonicNow();
  }

  async ready(timeoutMs: number): Promise<void> {
    if (!this.listener) throw new LeaseStoreError('not_ready', 'lease store not started');
    const waits = [this.listener.ready(timeoutMs)];
    // Until a read of every lease state has landed (once loaded, every request asks the listener alone).
    // A read that hangs (Firestore degraded) is waited on for timeoutMs at most: unbounded, every request
    // of the replica waited on it until Cloud Run's request timeout.
    const done = this.loaded ? null : new AbortController();
    if (done)
      waits.push(
        withDeadline(
          this.loadOrWait(done.signal),
          timeoutMs,
          () => new Error(`lease states not read within ${timeoutMs} ms`),
        ),
      );
    try {
      await Promise.all(waits);
    } catch (err) {
      throw new LeaseStoreError('not_ready', 'lease views not loaded', { cause: err });
    } finally {
      done?.abort();
    }
  }

  /**
   * Until a read of every lease state lands: the newest read, or a new one when it failed (more than a
   * second ago) or has been unanswered for LOAD_PENDING_MS — and any earlier read that lands first.
   */
  private async loadOrWait(signal: AbortSignal): Promise<void> {
    // async: its refusal is a rejection ready() awaits with the listener's wait. Thrown synchronously, it
    // left that wait (already started) to reject unhandled at its deadline — Node exits on that — so a
    // replica started while Firestore refused it crash-looped instead of answering 503.
    const now = this.monotonicNow();
    const current = this.loading;
    if (!current && now < this.loadFailedAt + LOAD_RETRY_MS)
      throw new LeaseStoreError('not_ready', 'lease views not loaded (the last read failed)');
    const read = current && now - current.startedAt < LOAD_PENDING_MS ? current : this.load();
    return Promise.race([read.settled.wait(signal), this.landed.wait(signal)]);
  }

  async stop(): Promise<void> {
    this.listener?.stop();
    this.listener = null;
  }

  usage(proxy: ProxyInstance, now: Date): Usage {
    return this.state.usage(proxy, now);
  }

  pending(proxy: string): number {
    return this.inFlight.get(proxy);
  }

  refresh(proxies: readonly string[], limit?: number): Promise<number> {
    return this.access.refresh(proxies, this.staleAfterMs, limit);
  }

  async countActive(): Promise<number> {
    const now = Timestamp.fromDate(this.clock.now());
    const query = this.db.collection(LEASE_COLLECTIONS.leases).where('endsAt', '>', now);
    const snap = await guard('count active leases', () => query.count().get());
    return snap.data().count;
  }

  coolingDown(proxy: ProxyInstance, target: string | null, now: Date): boolean {
    return this.cooldowns.coolingDown(proxy, target, now);
  }

  cooldownEnd(proxy: ProxyInstance, target: string | null, now: Date): Date | null {
    return this.cooldowns.cooldownEnd(proxy, target, now);
  }

  grant(request: GrantRequest): Promise<GrantOutcome> {
    return grantLease(this.parts, request);
  }

  findKey(recordId: string): Promise<StoredKey | null> {
    return this.keys.findKey(recordId);
  }

  markReplayed(recordId: string, version: KeyVersion): Promise<boolean> {
    return this.keys.markReplayed(recordId, version);
  }

  release(leaseId: string, opts: { dropKey?: KeyDrop } = {}): Promise<boolean> {
    return releaseLease(this.parts, leaseId, opts);
  }

  renew(leaseId: string, ttlSeconds?: number, renewable?: (lease: Lease) => boolean): Promise<RenewOutcome> {
    return renewLease(this.parts, leaseId, ttlSeconds, renewable);
  }

  async find(leaseId: string): Promise<Lease | null> {
    return (await this.locate(leaseId))?.lease ?? null;
  }

  async findForReport(leaseId: string): Promise<ReportedLease | null> {
    const found = await this.locate(leaseId);
    if (!found?.lease) return null;
    const { lease, cooldownSites, version } = found;
    return { lease, cooldownSites, version: version as unknown as LeaseVersion };
  }

  /**
   * The lease document: decoded, or — edited by hand into one that does not decode — null beside the
   * proxy it still names (null too when it names none); null when there is no document.
   */
  private locate(leaseId: string): Promise<LocatedLease | null> {
    return locateLease(this.db, this.log, leaseId);
  }

  /**
   * Starts a cooldown, with its site's listing on the lease when new to it (lease-cooldown-write.ts).
   */
  startCooldown(cooldown: Cooldown, read: ReportedLease): Promise<CooldownStart> {
    // One lease's reports on this replica one at a time: at once they would race for its document.
    const wait = {
      ms: this.lockWaitMs,
      error: () => new LockWaitError('unavailable', `cooldowns of a lease queued past ${this.lockWaitMs} ms`),
    };
    return this.leaseLock.run(cooldown.leaseId, () => writeCooldown(this.parts, cooldown, read), wait);
  }

  /**
   * This replica's writes to one proxy's state run one at a time (each starts from the last one's
   * result instead of racing it to a failed precondition), and while they wait or run they count as
   * pending, so that selection steers new grants to proxies nobody is writing to. The wait for a turn is
   * bounded like a store call: while Firestore stalls every holder takes its whole deadline, and the k-th
   * request queued on a busy proxy answered after k of them — at Cloud Run's concurrency, its 300 s timeout.
   */
  private writing<T>(proxy: string, fn: () => Promise<T>, waitMs = this.lockWaitMs): Promise<T> {
    const wait = {
      ms: waitMs,
      error: () =>
        new LockWaitError(
          'unavailable',
          `writes to the lease state of ${proxy} queued: no turn within ${waitMs} ms`,
        ),
    };
    return this.inFlight.around(proxy, () => this.lock.run(proxy, fn, wait));
  }
}
