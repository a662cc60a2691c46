// FirestoreLeaseStore: the seed's in-memory lease store (§7, "one lock: select+insert") made durable and
// shared by any number of replicas. Each proxy's active entries live in leaseState/{proxy}; every change
// to them is one batched write of that document — guarded by a lastUpdateTime precondition on the state
// it was computed from — together with the lease document (lease-state-access.ts). So a grant can only
// commit against the latest state, and capacity is checked against exactly that state: no proxy is ever
// over capacity, whatever the concurrency. Preconditioned writes rather than transactions, because the
// emulator's pessimistic locks stall contending transactions for seconds
// (../shared/design/gcp-offline-recipes.md §7); both are valid in production.
import { randomBytes } from 'node:crypto';
import { FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import {
  activeEntries,
  extendEntry,
  grantEntry,
  hasRoom,
  removeEntry,
  type Usage,
  usageOf,
} from '../../domain/leases/capacity.js';
import { siteListing } from '../../domain/leases/cooldown-sites.js';
import type { ProxyInstance } from '../../domain/leases/instance.js';
import {
  type Cooldown,
  type Lease,
  type LeaseEntry,
  type LeaseSettings,
  renewedExpiry,
  resolvableUntil,
} from '../../domain/leases/model.js';
import { type Candidate, ranksBehind } from '../../domain/leases/selection.js';
import type { Clock } from '../../ports/clock.js';
import {
  COOLDOWN_SITES_PER_LEASE,
  type CooldownStart,
  type GrantOutcome,
  type GrantRequest,
  type KeyDrop,
  type KeyIntent,
  type KeyVersion,
  type LeaseStore,
  LeaseStoreError,
  type LeaseVersion,
  type NewLease,
  type RenewOutcome,
  type ReportedLease,
  type StoredKey,
} from '../../ports/lease-store.js';
import { withDeadline } from '../deadline.js';
import { Latch } from '../latch.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { loggedLeaseId } from '../log/logged-lease-id.js';
import { cooldownDocId, LEASE_COLLECTIONS, TTL_FIELD } from './lease-collections.js';
import {
  decodeKey,
  decodeLease,
  encodeCooldown,
  encodeKey,
  encodeLease,
  leaseProxyOf,
  REPLAYED_FIELD,
} from './lease-converter.js';
import { LeaseCooldownCache } from './lease-cooldown-cache.js';
import { isConflict, isTransient, jitteredBackoff } from './lease-errors.js';
import { KeyedLock, PendingCounter } from './lease-keyed-lock.js';
import { type CollectionListener, listenCollection } from './lease-listener.js';
import { type Budget, bounded, type DocumentWrite, guard, LeaseStateAccess } from './lease-state-access.js';
import { LeaseStateCache, type StateBase } from './lease-state-cache.js';

export interface FirestoreLeaseStoreOptions {
  clock: Clock;
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
const LOAD_RETRY_MS = 1_000;
/**
 * How long a write waits for its turn on its proxy's lock before it answers 503 unavailable (a grant, over
 * all its candidates: it passes over those still queued and tries the next). Each call under
 * the lock is bounded (STORE_CALL_DEADLINE_MS), the wait was not: behind a stalled Firestore the k-th
 * request answered after k deadlines, up to Cloud Run's 300 s. Not the call's 5 s: a hot proxy's honest
 * queue (a holder reads, then commits up to 16 times with backoff on conflicts) outgrew that under load,
 * and 600 crawlers on 20 proxies got 503s from a healthy store (test/invariants/leases-capacity.test.ts).
 */
export const LOCK_WAIT_MS = 30_000;

/** A write whose turn on its proxy's lock did not come in time: unavailable, and nothing was written. */
class LockWaitError extends LeaseStoreError {}

/**
 * How long a read of every lease state may stay unanswered before a request starts another. Younger, it
 * is waited on again rather than read anew: a degraded Firestore slower than ready()'s wait got a new
 * full read from every request and none was ever waited for to the end. Older, it is likelier lost than
 * slow (the client's own deadline is 300 s), and a new one gives the replica another chance.
 */
export const LOAD_PENDING_MS = 60_000;

/** A read of every lease state, unanswered since `startedAt`. */
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
/**
 * States of candidates this replica does not hold — forgotten while idle (lease-state-cache.ts
 * FORGET_IDLE_MS) or never read — that one grant reads before it passes over the rest. Such a state ranks
 * as empty and finding it full costs no commit, so once other replicas had filled those proxies no commit
 * budget bounded the reads: a pool of 1,000 cost 1,000 reads, one round trip each, for one 409.
 */
const UNKNOWN_READ_LIMIT = 16;

/** What grantOn did on one candidate. */
type GrantOn =
  | Lease
  | 'gateway'
  | 'key_taken'
  /** Its commit lost to another replica, and the count the re-read found ranks it behind a later candidate. */
  | 'passed'
  /** It has room, but a commit on it would leave none of the request's budget for a candidate passed over. */
  | 'spent'
  | null;

/** How grantOn may treat a candidate: first time through, or as a fallback once later ones had no room. */
interface GrantTurn {
  /**
   * Whether, at `active` leases as a re-read found them, it now ranks behind a later candidate; null for a
   * fallback (never passed over twice).
   */
  behind: ((active: number, now: Date) => boolean) | null;
  /** Commits to keep for the candidates passed over (a first time through, once one was). */
  reserve: number;
}

/** The least the passed-over candidates' fallbacks, together, may wait for their proxies' locks (grant()). */
const FALLBACK_LOCK_WAIT_MS = 2_000;

export class FirestoreLeaseStore implements LeaseStore {
  private readonly clock: Clock;
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

  constructor(
    private readonly db: Firestore,
    opts: FirestoreLeaseStoreOptions,
  ) {
    this.clock = opts.clock;
    this.settings = opts.settings;
    this.log = opts.log ?? jsonLogger({ component: 'lease-store' });
    this.state = new LeaseStateCache(this.log);
    this.maxCommits = opts.maxCommits ?? 16;
    this.access = new LeaseStateAccess(db, this.state, this.clock, this.log, this.maxCommits);
    this.cooldowns = new LeaseCooldownCache(this.log, () => this.clock.now().getTime());
    this.staleAfterMs = opts.staleAfterMs ?? 1000;
    this.lockWaitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
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
      startedAt: this.clock.now().getTime(),
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
    this.loadFailedAt = this.clock.now().getTime();
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
    const now = this.clock.now().getTime();
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

  async grant({ candidates, lease, claimSettled }: GrantRequest): Promise<GrantOutcome> {
    const budget: Budget = { commits: 0 };
    const settled = claimSettled ?? (() => false);
    // What this request knows of its key record, across candidates (a TTL deletion seen on one changes
    // how the next commit writes it).
    const key = lease.key ? { ...lease.key } : undefined;
    let atCapacity = 0;
    let inGateway = 0;
    // Candidates whose state this replica does not hold: read so far, and passed over unread.
    let unknownRead = 0;
    let unread = 0;
    // The request's wait for proxy locks, over all its candidates: a candidate whose queue outlasts it is
    // passed over, as is every later one whose lock is not free at once. Failing the request there (as a
    // store failure) answered 503 although the next candidates could have had room. Timed as the wait is
    // (timers), not by the lease clock.
    const lockDeadline = performance.now() + this.lockWaitMs;
    let queued = 0;
    // Candidates passed over after a lost commit (grantOn 'passed'): ranked behind a later one on what the
    // re-read found, yet with room. Tried again, in turn, once no later one granted — never passed twice.
    const passed: Candidate[] = [];
    /** Candidates not tried because the budget left had to be kept for those passed over. */
    let untried = 0;
    const write = (candidate: Candidate, turn: GrantTurn) =>
      this.writing(
        candidate.name,
        () => this.grantOn(candidate, lease, budget, settled, key, turn),
        Math.max(0, lockDeadline - performance.now()),
      );
    for (const [i, candidate] of candidates.entries()) {
      if (!this.state.get(candidate.name)) {
        if (unknownRead >= UNKNOWN_READ_LIMIT) {
          unread++;
          continue;
        }
        // The first is read alone, by grantOn: it usually has room. Once one had none, the view is behind
        // other replicas' grants, and the next ones are read together, in one call.
        unknownRead +=
          unknownRead === 0
            ? 1
            : await this.readUnknown(candidates.slice(i), UNKNOWN_READ_LIMIT - unknownRead);
      }
      let granted: GrantOn;
      try {
        granted = await write(candidate, {
          behind: (active, now) =>
            this.ranksBehindLater(candidate, active, candidates.slice(i + 1), lease, now),
          reserve: passed.length > 0 ? 1 : 0,
        });
      } catch (err) {
        if (!(err instanceof LockWaitError)) throw err;
        queued++;
        continue;
      }
      if (granted === 'key_taken') return { kind: 'key_taken' };
      if (granted === 'passed') passed.push(candidate);
      else if (granted === 'spent') {
        passed.push(candidate);
        untried = candidates.length - i - 1;
        break;
      } else if (granted === 'gateway') inGateway++;
      else if (granted) return { kind: 'granted', lease: granted };
      else atCapacity++;
    }
    // The fallbacks' wait: at least a short one of their own, the request's spent or not — a lock this
    // request held when it passed the proxy over, taken since by another local write, must not turn a proxy
    // with room into a 503 because a later candidate's queue used the request's wait up. One bound for all
    // of them, so the fallbacks add FALLBACK_LOCK_WAIT_MS to a request at most.
    const fallbackDeadline = Math.max(lockDeadline, performance.now() + FALLBACK_LOCK_WAIT_MS);
    for (const candidate of passed) {
      let granted: GrantOn;
      try {
        granted = await this.writing(
          candidate.name,
          () => this.grantOn(candidate, lease, budget, settled, key, { behind: null, reserve: 0 }),
          Math.max(0, fallbackDeadline - performance.now()),
        );
      } catch (err) {
        if (!(err instanceof LockWaitError)) throw err;
        queued++;
        continue;
      }
      if (granted === 'key_taken') return { kind: 'key_taken' };
      if (granted === 'gateway') inGateway++;
      else if (typeof granted === 'object' && granted) return { kind: 'granted', lease: granted };
      else atCapacity++; // not 'passed' nor 'spent': a fallback is neither
    }
    if (untried > 0)
      throw new LeaseStoreError(
        'contended',
        `commits lost race after race: ${untried} candidate(s) not tried, those passed over taken meanwhile`,
      );
    // Not "no room": those passed over may have some. Queued behind other writes, they are busy now.
    if (queued > 0)
      throw new LeaseStoreError(
        'unavailable',
        `writes to the lease state of ${queued} candidate(s) queued past ${this.lockWaitMs} ms; none of the others leasable`,
      );
    // The retry finds the ones read here full, and reads the next ones.
    if (unread > 0)
      throw new LeaseStoreError(
        'contended',
        `${unknownRead} lease states this replica did not hold were read, none leasable; ${unread} more not read`,
        { unread },
      );
    return { kind: 'no_room', atCapacity, inGateway };
  }

  /**
   * Whether `candidate`, at `active` leases as a re-read found them, now ranks behind the first of `later`
   * that this replica's view gives room — counted as selection counts it (active + this replica's pending).
   */
  private ranksBehindLater(
    candidate: Candidate,
    active: number,
    later: readonly Candidate[],
    lease: NewLease,
    now: Date,
  ): boolean {
    const next = later.find((c) => hasRoom(this.state.usage(c, now), c.capacity, lease.exclusive));
    if (!next) return false;
    // This request's own write is among the candidate's pending ones: selection ranked it without it.
    const mine = active + this.inFlight.get(candidate.name) - 1;
    return ranksBehind(
      candidate,
      mine,
      next,
      this.state.usage(next, now).active + this.inFlight.get(next.name),
    );
  }

  /** Reads, in one call, the states of the first `limit` of these candidates that the view does not hold. */
  private async readUnknown(candidates: readonly Candidate[], limit: number): Promise<number> {
    const names = candidates
      .filter((c) => !this.state.get(c.name))
      .slice(0, limit)
      .map((c) => c.name);
    await this.access.refresh(names, this.staleAfterMs);
    return names.length;
  }

  private async grantOn(
    candidate: Candidate,
    lease: NewLease,
    budget: Budget,
    claimSettled: (proxy: string, claimEpoch: number) => boolean,
    key: KeyIntent | undefined,
    turn: GrantTurn,
  ): Promise<GrantOn> {
    let base = this.state.get(candidate.name);
    let fresh = false;
    let lostCommit = false;
    for (;;) {
      const before = base?.gatewayClaim ?? null;
      if (!base || fresh) base = await this.access.read(candidate.name);
      // The clock is read after the base is known, so a grant is never stamped before the release or
      // expiry that made its room: stored leases alone prove the capacity invariant.
      const now = this.clock.now();
      if (fresh && base.entries?.some((e) => e.leaseId === lease.id)) {
        // An earlier attempt committed although its answer was lost: the stored lease is the grant.
        return this.find(lease.id);
      }
      // The snapshot planner assigned the proxy to a gateway worker after the lease service's view said
      // it was free (domain/workers/leasable.ts gatewayClaimSettled). A claim this replica does not know
      // of yet is found when the commit below fails its precondition and the state is read again.
      const claim = base.gatewayClaim ?? null;
      if (claim !== null && !claimSettled(candidate.name, claim)) {
        // A commit that failed only because the planner claimed the proxy meanwhile was no capacity race:
        // it does not count against the request's budget (a pool flip of many proxies this replica knew
        // as free would otherwise use it up before a free candidate further down is tried).
        if (fresh && claim !== before) this.access.refund(budget);
        return 'gateway';
      }
      const expiresAt = new Date(now.getTime() + lease.ttlSeconds * 1000);
      // The entry and the lease name the proxy instance: a proxy created again under this name is another
      // one, whose capacity this lease does not take (domain/leases/instance.ts).
      const entry = {
        leaseId: lease.id,
        expiresAt,
        exclusive: lease.exclusive,
        proxyUid: candidate.uid,
      } satisfies LeaseEntry;
      const entries = base.entries && grantEntry(base.entries, entry, candidate.capacity, now);
      if (!entries) {
        // A commit lost to a grant that filled the proxy was a view out of date, as the claim above: it
        // is given back too (refund: bounded). One per candidate: losses on a proxy that still has room,
        // contention proper, go on counting.
        if (lostCommit) this.access.refund(budget);
        // Full as far as this replica knows; when that knowledge is old, another replica may have
        // released since: look once more before moving on.
        if (fresh || this.state.ageMs(candidate.name, now) <= this.staleAfterMs) return null;
        fresh = true;
        continue;
      }
      // A commit lost to another replica's write: what the re-read found may rank this proxy behind the next
      // candidate (selection ranked it on this replica's view, which others' grants do not update). Then
      // the lease goes there — every replica racing for the proxy they all ranked first piled their leases
      // onto it — and this one is tried again only if no later one grants. The lost commit was a view out
      // of date, not contention: given back, unless none is left to give (then it commits here). Only
      // after a definite conflict: a commit failed transiently may land after the read just made, and
      // the next candidate's commit, creating the same lease document, would then fail every time while
      // this proxy held a lease nobody was answered with; its own retry here finds that lease.
      if (
        lostCommit &&
        budget.lastLoss === 'conflict' &&
        turn.behind?.(usageOf(base.entries ?? [], candidate.uid, now).active, now)
      ) {
        const refunds = budget.refunds ?? 0;
        this.access.refund(budget);
        if ((budget.refunds ?? 0) > refunds) return 'passed';
      }
      // Not while this candidate's last commit failed transiently: it may land after the read just made,
      // and then a commit of the lease on the candidates passed over fails on the lease document it created
      // until the budget runs out — a 503 while this proxy holds the lease. Committed again here (the
      // commit kept for them), at most one of the two lands, and a loss re-reads the state that shows which.
      const unsettled = lostCommit && budget.lastLoss === 'transient';
      if (turn.reserve > 0 && !unsettled && budget.commits + turn.reserve >= this.maxCommits) return 'spent';
      const { key: _key, ...fields } = lease;
      const record: Lease = {
        ...fields,
        proxy: candidate.name,
        proxyUid: candidate.uid,
        endpoint: candidate.endpoint ?? null,
        grantedAt: now,
        expiresAt,
        releasedAt: null,
        renewals: 0,
      };
      const doc = encodeLease(record, resolvableUntil(record, this.settings));
      const create: DocumentWrite = { ref: this.leaseRef(lease.id), write: (b, ref) => b.create(ref, doc) };
      // A settled claim goes with this write: history, and it would otherwise outlive the lease.
      if (
        await this.access.commit(
          candidate.name,
          base,
          entries,
          now,
          budget,
          key ? [create, this.keyWrite(lease.id, key, now)] : [create],
          claim !== null,
        )
      ) {
        return record;
      }
      fresh = true;
      lostCommit = true;
      if (key) {
        // The commit failed: on the state's precondition, or on the key record's — another delivery of
        // the same key wrote it first — or transiently, having landed all the same.
        const stored = await this.findKey(key.recordId);
        if (stored?.leaseId === lease.id) return this.find(lease.id);
        if (!stored)
          key.replaces = null; // deleted meanwhile (its TTL): create it
        else if (!sameVersion(stored.version, key.replaces)) return 'key_taken';
      }
    }
  }

  /** The key record's write in a grant's commit: created, or written over the expired one that was read. */
  private keyWrite(leaseId: string, key: KeyIntent, now: Date): DocumentWrite {
    const data = encodeKey({ leaseId, requestHash: key.requestHash, expiresAt: key.expiresAt }, now);
    const replaces = key.replaces as Timestamp | null;
    return {
      ref: this.keyRef(key.recordId),
      write: (b, ref) => {
        // An update keeps the fields it does not name: the old lease's replay mark goes.
        if (replaces)
          b.update(ref, { ...data, [REPLAYED_FIELD]: FieldValue.delete() }, { lastUpdateTime: replaces });
        else b.create(ref, data);
      },
    };
  }

  async findKey(recordId: string): Promise<StoredKey | null> {
    const snap = await guard('read idempotency key', () => this.keyRef(recordId).get());
    if (!snap.exists || !snap.updateTime) return null;
    const version = snap.updateTime as unknown as KeyVersion;
    const key = decodeKey(snap.data());
    if (key) return { ...key, version };
    // Edited by hand: not a record any request can replay; the next grant with that key writes over it.
    this.log.error('malformed idempotency key record', { recordId });
    return {
      leaseId: '',
      requestHash: '',
      expiresAt: new Date(0),
      version,
      grantedAt: new Date(0),
      replayed: false,
    };
  }

  async markReplayed(recordId: string, version: KeyVersion): Promise<boolean> {
    const at = Timestamp.fromDate(this.clock.now());
    const precondition = { lastUpdateTime: version as unknown as Timestamp };
    try {
      await bounded(
        this.keyRef(recordId).update({ [REPLAYED_FIELD]: at }, precondition),
        'mark idempotency key replayed',
      );
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw new LeaseStoreError('unavailable', 'mark idempotency key replayed', { cause: err });
    }
  }

  /**
   * The key record `drop` names deleted while it is still that version: true once it is gone (by this
   * write, or already), false when another delivery has written it since. A delete that failed in
   * passing is tried again while the record is still that version.
   */
  private async dropKeyAlone(drop: KeyDrop): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        const at = { lastUpdateTime: drop.version as unknown as Timestamp };
        await bounded(this.keyRef(drop.recordId).delete(at), 'drop idempotency key');
        return true;
      } catch (err) {
        const transient = isTransient(err);
        if ((!isConflict(err) && !transient) || (transient && attempt >= KEY_DROP_ATTEMPTS))
          throw new LeaseStoreError('unavailable', 'drop idempotency key', { cause: err });
        const stored = await this.findKey(drop.recordId);
        if (stored === null) return true; // gone: by a delete that landed, or its TTL
        if (!sameVersion(stored.version, drop.version)) return false;
        if (!transient) return false; // a conflict, yet the same version: cannot be, never loop on it
        await jitteredBackoff(attempt);
      }
    }
  }

  /** Whether the key record is still the version `drop` names. */
  private async keyStill(drop: KeyDrop): Promise<boolean> {
    const stored = await this.findKey(drop.recordId);
    return stored !== null && sameVersion(stored.version, drop.version);
  }

  async release(leaseId: string, opts: { dropKey?: KeyDrop } = {}): Promise<boolean> {
    const drop = opts.dropKey;
    const dropKey: DocumentWrite[] = drop
      ? [
          {
            ref: this.keyRef(drop.recordId),
            write: (b, ref) => b.delete(ref, { lastUpdateTime: drop.version as unknown as Timestamp }),
          },
        ]
      : [];
    // Nothing to release: an ended lease's record goes alone.
    const over = () => (drop ? this.dropKeyAlone(drop) : Promise.resolve(true));
    let proxy = this.state.proxyOf(leaseId);
    /** Whether leases/{leaseId} is there to be updated (undefined: not looked at). */
    let stored: boolean | undefined;
    if (!proxy) {
      // A document edited into one that does not decode still names its proxy, whose entry is ended below.
      // Without a document (deleted by hand) there is nothing left to find the entry by: it holds its slot
      // until it expires (docs/leases.md, "Ending a lease by hand").
      const found = await this.locate(leaseId);
      if (!found?.proxy || found.lease?.releasedAt) return over();
      proxy = found.proxy;
      stored = true;
    }
    const name = proxy;
    const budget: Budget = { commits: 0 };
    return this.writing(name, async () => {
      let base: StateBase | undefined = this.state.get(name);
      let fresh = !base;
      for (;;) {
        if (!base || fresh) base = await this.access.read(name);
        const now = this.clock.now();
        if (base.entries === null && fresh) {
          // The proxy's state does not decode (edited by hand; logged): its entries cannot be rewritten,
          // and the proxy counts as full until it is repaired. The lease itself still ends now, so it is
          // neither counted active nor handed out again by a replay of its key — unless a replay has
          // already answered with it (the key record moved): the crawler may hold it, it is not given back.
          if (drop && !(await this.keyStill(drop))) return false;
          await this.endAlone(leaseId, now);
          return over();
        }
        const entries = base.entries && removeEntry(base.entries, leaseId, now);
        if (!entries) {
          // Not among the active entries: released or expired already (or by a commit that failed
          // transiently yet landed) — unless this view is behind.
          if (fresh) return over();
          fresh = true;
          continue;
        }
        // A commit failed: on the state's precondition, or on the key record's — written by a replay
        // that answered with this lease, which the crawler may now hold: it is not given back.
        if (drop && budget.commits > 0 && !(await this.keyStill(drop))) return false;
        // The update of a lease document deleted by hand fails as NOT_FOUND, which reads as a lost race:
        // the release was committed again until its budget ran out (503, at every retry), and the entry
        // held its slot until it expired. After a lost commit the document is looked for, once; gone, the
        // entry is ended alone.
        if (budget.commits > 0 && stored === undefined) {
          stored = (await this.locate(leaseId)) !== null;
          if (!stored)
            this.log.warn('lease document missing: its entry is ended alone', {
              lease: loggedLeaseId(leaseId),
              proxy: name,
            });
        }
        const ended = this.endedAt(now);
        const update: DocumentWrite = {
          ref: this.leaseRef(leaseId),
          write: (b, ref) => b.update(ref, ended),
        };
        const writes = stored === false ? dropKey : [update, ...dropKey];
        if (await this.access.commit(name, base, entries, now, budget, writes)) return true;
        fresh = true;
      }
    });
  }

  /** A lease document's fields once it is released at `now`. */
  private endedAt(now: Date) {
    const at = Timestamp.fromDate(now);
    const ttl = Timestamp.fromDate(resolvableUntil({ expiresAt: now, releasedAt: now }, this.settings));
    return { releasedAt: at, endsAt: at, [TTL_FIELD]: ttl };
  }

  /** Records a lease released at `now` on its document alone (its proxy's state cannot be rewritten). */
  private async endAlone(leaseId: string, now: Date): Promise<void> {
    try {
      await bounded(this.leaseRef(leaseId).update(this.endedAt(now)), 'end lease');
    } catch (err) {
      if ((err as { code?: unknown }).code === 5) return; // NOT_FOUND: no lease document to end
      throw new LeaseStoreError('unavailable', 'end lease', { cause: err });
    }
  }

  /**
   * Renewals of one lease, on this replica or others, are counted each and its TTL is the last one's: the
   * lease document is updated only while it is still the version read (a renewal that lost its race reads
   * it again, with the state), and `renewals` is computed from that version. Read before the proxy's lock,
   * it was written from the read whatever landed meanwhile: two renewals at once stored one.
   */
  async renew(
    leaseId: string,
    ttlSeconds?: number,
    renewable?: (lease: Lease) => boolean,
  ): Promise<RenewOutcome> {
    const found = await this.locate(leaseId);
    if (!found?.lease) return { kind: 'unknown' };
    let { lease, version, renewalIds } = found;
    if (lease.releasedAt) return { kind: 'released', lease };
    // Asked before the wait for the proxy's lock (a refused renewal need not queue), and again before
    // every commit: the wait can last LOCK_WAIT_MS, and a proxy cordoned or withdrawn meanwhile must not
    // have its lease extended by a renewal that was asked before — only the listener's own delay remains.
    // `current`: the lease as its entry has it now — a renewal that landed while this one waited moved
    // its expiry, and an entry still running is a refusal to answer as such, not "expired".
    const refused = (current: Lease): RenewOutcome | null => {
      if (!renewable || renewable(current)) return null;
      const ended = current.expiresAt.getTime() <= this.clock.now().getTime();
      return ended ? { kind: 'expired', lease: current } : { kind: 'withdrawn', lease: current };
    };
    const refusedBefore = refused(lease);
    if (refusedBefore) return refusedBefore;
    const { proxy } = lease;
    const budget: Budget = { commits: 0 };
    // Written with the renewal, beside the last few renewals' ids: a commit whose answer was lost is known
    // as this request's by it, even once other renewals have landed on top of it.
    const renewalId = randomBytes(8).toString('hex');
    return this.writing(proxy, async () => {
      let base: StateBase | undefined = this.state.get(proxy);
      let fresh = !base;
      /** Whether a commit of this renewal was lost (it may have landed: the client resends, or gives up). */
      let lost = false;
      for (;;) {
        if (lost) {
          // The lease document is read again: another renewal (or a report) may have written it since, and
          // the update is preconditioned on it. Listing this request's id, it holds this renewal's own write
          // — the client resent a commit that had landed and the resend failed its own precondition, or the
          // commit landed and its answer was lost — maybe with other renewals landed since: only the last
          // one's id, and this renewal counted again on top of them. Released since, it is answered as such
          // (whether or not this renewal landed before), not with a lease that has ended.
          const again = await this.locate(leaseId);
          if (!again?.lease) return { kind: 'unknown' };
          if (again.lease.releasedAt) return { kind: 'released', lease: again.lease };
          if (again.renewalIds.includes(renewalId)) return { kind: 'renewed', lease: again.lease };
          // Lost to the lease document alone (read before this request's turn), the state is not read
          // again, and the commit is given back: no contention, and no backoff before the next one.
          const cached = this.state.get(proxy);
          const leaseAlone =
            budget.lastLoss === 'conflict' &&
            cached &&
            lostToLeaseAlone(version, lease, again.version, again.lease, cached);
          if (leaseAlone) this.access.refund(budget);
          base = leaseAlone ? cached : base;
          fresh = !leaseAlone;
          ({ lease, version, renewalIds } = again);
          lost = false;
        }
        if (!base || fresh) base = await this.access.read(proxy);
        const now = this.clock.now();
        const entry = base.entries && activeEntries(base.entries, now).find((e) => e.leaseId === leaseId);
        if (base.entries === null && fresh && lease.expiresAt.getTime() > now.getTime()) {
          // Not expired: the renewal cannot be recorded in a state that does not decode (logged when read).
          throw new LeaseStoreError(
            'unavailable',
            `the lease state of proxy ${lease.proxy} does not decode: lease ${leaseId} cannot be renewed until it is repaired`,
          );
        }
        if (!base.entries || !entry) {
          if (!fresh) {
            fresh = true;
            continue;
          }
          const latest = (await this.find(leaseId)) ?? lease;
          return latest.releasedAt ? { kind: 'released', lease: latest } : { kind: 'expired', lease: latest };
        }
        const refusedNow = refused({ ...lease, expiresAt: entry.expiresAt });
        if (refusedNow) return refusedNow;
        const ttl = ttlSeconds ?? lease.ttlSeconds;
        const expiresAt = renewedExpiry(entry, ttl, now);
        const entries = extendEntry(base.entries, leaseId, expiresAt, now) ?? [];
        const renewed: Lease = { ...lease, expiresAt, ttlSeconds: ttl, renewals: lease.renewals + 1 };
        const changes = {
          expiresAt: Timestamp.fromDate(expiresAt),
          endsAt: Timestamp.fromDate(expiresAt),
          ttlSeconds: ttl,
          renewals: renewed.renewals,
          [RENEWAL_IDS_FIELD]: [...renewalIds, renewalId].slice(-RECENT_RENEWAL_IDS),
          [LEGACY_RENEWAL_ID_FIELD]: FieldValue.delete(),
          [TTL_FIELD]: Timestamp.fromDate(resolvableUntil(renewed, this.settings)),
        };
        const read = version;
        const update: DocumentWrite = {
          ref: this.leaseRef(leaseId),
          write: (b, ref) => b.update(ref, changes, { lastUpdateTime: read }),
        };
        if (await this.access.commit(proxy, base, entries, now, budget, [update])) {
          return { kind: 'renewed', lease: renewed };
        }
        lost = true;
      }
    });
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
  private async locate(leaseId: string): Promise<LocatedLease | null> {
    const snap = await guard('read lease', () => this.leaseRef(leaseId).get());
    if (!snap.exists || !snap.updateTime) return null;
    const data = snap.data();
    const version = snap.updateTime;
    const renewalIds = stringsOf(data?.[RENEWAL_IDS_FIELD]);
    const cooldownSites = stringsOf(data?.[COOLDOWN_SITES_FIELD]);
    const lease = decodeLease(data);
    if (lease) return { lease, proxy: lease.proxy, version, renewalIds, cooldownSites };
    this.log.error('malformed lease document', { lease: loggedLeaseId(leaseId) });
    return { lease: null, proxy: leaseProxyOf(data), version, renewalIds, cooldownSites };
  }

  /**
   * The sites a lease has started cooldowns for are listed on it (`cooldownSites`): a cooldown for a site
   * not listed yet is written together with the site's addition, preconditioned on the lease document as
   * read, so that reports at once on any replicas never list more than COOLDOWN_SITES_PER_LEASE. Without
   * it one lease reporting ever new targets wrote a cooldown document for each. The proxy-wide cooldown and
   * the lease's own site are never capped nor listed (cooldown-sites.ts): capped, a `banned` report
   * without a target past the cap left a banned proxy to be handed out. The lease is the report's own read
   * of it (findForReport): read here again, a report paid two reads of it — and only when another write
   * to it landed since is it read again.
   */
  startCooldown(cooldown: Cooldown, read: ReportedLease): Promise<CooldownStart> {
    // One lease's reports on this replica one at a time: at once they would race for its document.
    const wait = {
      ms: this.lockWaitMs,
      error: () => new LockWaitError('unavailable', `cooldowns of a lease queued past ${this.lockWaitMs} ms`),
    };
    return this.leaseLock.run(cooldown.leaseId, () => this.writeCooldown(cooldown, read), wait);
  }

  private async writeCooldown(cooldown: Cooldown, read: ReportedLease): Promise<CooldownStart> {
    const id = cooldownDocId(cooldown.proxy, cooldown.target);
    const ref = this.db.collection(LEASE_COLLECTIONS.cooldowns).doc(id);
    const leaseRef = this.leaseRef(cooldown.leaseId);
    let sites = read.cooldownSites;
    let version = read.version as unknown as Timestamp;
    for (let attempt = 1; ; attempt++) {
      const listing = siteListing(cooldown.target, read.lease.target, sites, COOLDOWN_SITES_PER_LEASE);
      if (listing === 'capped') return 'capped';
      const batch = this.db.batch().set(ref, encodeCooldown(cooldown));
      if (listing === 'add') {
        const add = { [COOLDOWN_SITES_FIELD]: FieldValue.arrayUnion(cooldown.target) };
        batch.update(leaseRef, add, { lastUpdateTime: version });
      }
      try {
        await bounded(batch.commit(), 'write cooldown');
        this.cooldowns.put(id, cooldown);
        return 'started';
      } catch (err) {
        // The lease written since it was read (a renewal, another report), or deleted: read it again.
        if (!isConflict(err)) throw new LeaseStoreError('unavailable', 'write cooldown', { cause: err });
        if (attempt >= this.maxCommits)
          throw new LeaseStoreError('contended', `no cooldown written after ${attempt} attempts`, {
            cause: err,
          });
        // The first loss is to the version the report read before its turn: no contention yet.
        if (attempt > 1) await jitteredBackoff(attempt - 1);
        const again = await this.locate(cooldown.leaseId);
        if (!again?.lease) return 'unknown_lease';
        ({ cooldownSites: sites, version } = again);
      }
    }
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

  private leaseRef(id: string) {
    return this.db.collection(LEASE_COLLECTIONS.leases).doc(id);
  }

  private keyRef(recordId: string) {
    return this.db.collection(LEASE_COLLECTIONS.keys).doc(recordId);
  }
}

/**
 * A lease document as read: decoded, or — edited by hand into one that does not decode — null beside the
 * proxy it still names; its version, and the ids of the last renewals that wrote it, oldest first.
 */
interface LocatedLease {
  lease: Lease | null;
  proxy: string | null;
  version: Timestamp;
  renewalIds: string[];
  /** The sites it has started cooldowns for (startCooldown). */
  cooldownSites: string[];
}

/**
 * Whether a renewal's commit, lost to a failed precondition — of its proxy's state or of its lease document,
 * which Firestore does not say — lost it to the lease document alone, the state being as `cached` holds it:
 * the lease was written since `read` (`before` then, `after` at `version` now), and that write either came with the
 * state cached (the same commit: its time is both documents' version — a renewal this replica committed
 * while this one waited for its turn) or left the state alone (no renewal: a report listing a site). Each
 * such loss had read the state again for nothing, and cost one of the request's commits and a backoff. A
 * wrong guess (the state written meanwhile by another lease) only loses the next commit to the state, with
 * the lease as read: that loss reads the state.
 */
function lostToLeaseAlone(
  read: Timestamp,
  before: Lease,
  version: Timestamp,
  after: Lease,
  cached: StateBase,
): boolean {
  if (version.isEqual(read)) return false;
  if (cached.version?.isEqual(version)) return true;
  return after.renewals === before.renewals && after.expiresAt.getTime() === before.expiresAt.getTime();
}

/** The lease document's list of the ids of its last renewals, oldest first (renew). */
const RENEWAL_IDS_FIELD = 'renewalIds';

/**
 * Renewal ids a lease keeps: a renewal whose commit landed unanswered knows it as its own as long as fewer
 * than this many others of the lease landed before it reads the lease again (a read later).
 */
const RECENT_RENEWAL_IDS = 8;

/** The last renewal's id alone, as renewals wrote it before they kept several: removed by the next one. */
const LEGACY_RENEWAL_ID_FIELD = 'renewalId';

/** The lease document's list of the sites it started cooldowns for (startCooldown). */
const COOLDOWN_SITES_FIELD = 'cooldownSites';

/** The strings a list field holds (none when the field is absent, or edited into something else). */
function stringsOf(field: unknown): string[] {
  return Array.isArray(field) ? field.filter((s): s is string => typeof s === 'string') : [];
}

/** Deletes of an ended lease's key record tried before a failure in passing is answered 503. */
const KEY_DROP_ATTEMPTS = 3;

function sameVersion(a: KeyVersion, b: KeyVersion | null): boolean {
  return b !== null && (a as unknown as Timestamp).isEqual(b as unknown as Timestamp);
}
