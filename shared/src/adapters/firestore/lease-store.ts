// FirestoreLeaseStore: the seed's in-memory lease store (§7, "one lock: select+insert") made durable and
// shared by any number of replicas. Each proxy's active entries live in leaseState/{proxy}; every change
// to them is one batched write of that document — guarded by a lastUpdateTime precondition on the state
// it was computed from — together with the lease document. So a grant can only commit against the latest
// state, and capacity is checked against exactly that state: no proxy is ever over capacity, whatever the
// concurrency. Preconditioned writes rather than transactions, because the emulator's pessimistic locks
// stall contending transactions for seconds (../shared/design/gcp-offline-recipes.md §7); both are valid
// in production.
import { FieldValue, type Firestore, Timestamp, type WriteBatch } from '@google-cloud/firestore';
import {
  activeEntries,
  extendEntry,
  grantEntry,
  removeEntry,
  type Usage,
} from '../../domain/leases/capacity.js';
import {
  type Cooldown,
  type Lease,
  type LeaseEntry,
  type LeaseSettings,
  renewedExpiry,
  resolvableUntil,
} from '../../domain/leases/model.js';
import type { Candidate } from '../../domain/leases/selection.js';
import type { Clock } from '../../ports/clock.js';
import {
  type GrantOutcome,
  type GrantRequest,
  type LeaseStore,
  LeaseStoreError,
  type NewLease,
  type RenewOutcome,
} from '../../ports/lease-store.js';
import { cooldownDocId, LEASE_COLLECTIONS, TTL_FIELD } from './lease-collections.js';
import { decodeLease, decodeState, encodeCooldown, encodeLease, encodeState } from './lease-converter.js';
import { LeaseCooldownCache } from './lease-cooldown-cache.js';
import { isConflict, isTransient, jitteredBackoff } from './lease-errors.js';
import { KeyedLock, PendingCounter } from './lease-keyed-lock.js';
import {
  type CollectionListener,
  listenCollection,
  type StructuredLog,
  stderrLog,
} from './lease-listener.js';
import { LeaseStateCache, type StateBase } from './lease-state-cache.js';

export interface FirestoreLeaseStoreOptions {
  clock: Clock;
  settings: LeaseSettings;
  log?: StructuredLog;
  /** Commits one request may attempt before answering "contended" (each retry re-reads the state). */
  maxCommits?: number;
}

/** Shared by the attempts of one request, across candidates. */
interface Budget {
  commits: number;
}

export class FirestoreLeaseStore implements LeaseStore {
  private readonly clock: Clock;
  private readonly settings: LeaseSettings;
  private readonly log: StructuredLog;
  private readonly maxCommits: number;
  private readonly state: LeaseStateCache;
  private readonly cooldowns: LeaseCooldownCache;
  private readonly lock = new KeyedLock();
  private readonly inFlight = new PendingCounter();
  private listeners: CollectionListener[] = [];

  constructor(
    private readonly db: Firestore,
    opts: FirestoreLeaseStoreOptions,
  ) {
    this.clock = opts.clock;
    this.settings = opts.settings;
    this.log = opts.log ?? stderrLog;
    this.maxCommits = opts.maxCommits ?? 16;
    this.state = new LeaseStateCache(this.log);
    this.cooldowns = new LeaseCooldownCache(this.log);
  }

  /** Starts the listeners that keep the local views fresh. */
  start(): this {
    if (this.listeners.length > 0) return this;
    const { leaseState, cooldowns } = LEASE_COLLECTIONS;
    this.listeners = [
      listenCollection(this.db.collection(leaseState), this.state, { name: leaseState, log: this.log }),
      listenCollection(this.db.collection(cooldowns), this.cooldowns, { name: cooldowns, log: this.log }),
    ];
    return this;
  }

  async ready(timeoutMs: number): Promise<void> {
    if (this.listeners.length === 0) throw new LeaseStoreError('not_ready', 'lease store not started');
    try {
      await Promise.all(this.listeners.map((l) => l.ready(timeoutMs)));
    } catch (err) {
      throw new LeaseStoreError('not_ready', 'lease views not loaded', { cause: err });
    }
  }

  async stop(): Promise<void> {
    for (const l of this.listeners) l.stop();
    this.listeners = [];
  }

  usage(proxy: string, now: Date): Usage {
    return this.state.usage(proxy, now);
  }

  pending(proxy: string): number {
    return this.inFlight.get(proxy);
  }

  totalActive(now: Date): number {
    return this.state.totalActive(now);
  }

  coolingDown(proxy: string, target: string | null, now: Date): boolean {
    return this.cooldowns.coolingDown(proxy, target, now);
  }

  async grant({ candidates, lease }: GrantRequest): Promise<GrantOutcome> {
    const budget: Budget = { commits: 0 };
    let atCapacity = 0;
    for (const candidate of candidates) {
      const granted = await this.inFlight.around(candidate.name, () =>
        this.lock.run(candidate.name, () => this.grantOn(candidate, lease, budget)),
      );
      if (granted) return { kind: 'granted', lease: granted };
      atCapacity++;
    }
    return { kind: 'no_room', atCapacity };
  }

  private async grantOn(candidate: Candidate, lease: NewLease, budget: Budget): Promise<Lease | null> {
    let base = this.state.get(candidate.name);
    let fresh = false;
    for (;;) {
      if (!base || fresh) base = await this.readState(candidate.name);
      // The clock is read after the base is known, so a grant is never stamped before the release or
      // expiry that made its room: stored leases alone prove the capacity invariant.
      const now = this.clock.now();
      if (fresh && base.entries?.some((e) => e.leaseId === lease.id)) {
        // An earlier attempt committed although its answer was lost: the stored lease is the grant.
        return this.find(lease.id);
      }
      const expiresAt = new Date(now.getTime() + lease.ttlSeconds * 1000);
      const entry: LeaseEntry = { leaseId: lease.id, expiresAt, exclusive: lease.exclusive };
      const entries = base.entries && grantEntry(base.entries, entry, candidate.capacity, now);
      if (!entries) return null;
      const record: Lease = {
        ...lease,
        proxy: candidate.name,
        grantedAt: now,
        expiresAt,
        releasedAt: null,
        renewals: 0,
      };
      const doc = encodeLease(record, resolvableUntil(record, this.settings));
      if (
        await this.commit(candidate.name, base, entries, now, budget, (b) =>
          b.create(this.leaseRef(lease.id), doc),
        )
      ) {
        return record;
      }
      fresh = true;
    }
  }

  async release(leaseId: string): Promise<void> {
    let proxy = this.state.proxyOf(leaseId);
    if (!proxy) {
      const lease = await this.find(leaseId);
      if (!lease || lease.releasedAt) return;
      proxy = lease.proxy;
    }
    const name = proxy;
    const budget: Budget = { commits: 0 };
    await this.lock.run(name, async () => {
      let base = this.state.get(name);
      let fresh = !base;
      for (;;) {
        if (!base || fresh) base = await this.readState(name);
        const now = this.clock.now();
        const entries = base.entries && removeEntry(base.entries, leaseId, now);
        if (!entries) {
          // Not among the active entries: released or expired already — unless the local view is behind.
          if (fresh) return;
          fresh = true;
          continue;
        }
        const ended = {
          releasedAt: Timestamp.fromDate(now),
          [TTL_FIELD]: Timestamp.fromDate(
            resolvableUntil({ expiresAt: now, releasedAt: now }, this.settings),
          ),
        };
        if (
          await this.commit(name, base, entries, now, budget, (b) => b.update(this.leaseRef(leaseId), ended))
        )
          return;
        fresh = true;
      }
    });
  }

  async renew(leaseId: string, ttlSeconds?: number): Promise<RenewOutcome> {
    const lease = await this.find(leaseId);
    if (!lease) return { kind: 'unknown' };
    if (lease.releasedAt) return { kind: 'released', lease };
    const ttl = ttlSeconds ?? lease.ttlSeconds;
    const budget: Budget = { commits: 0 };
    return this.lock.run(lease.proxy, async () => {
      let base = this.state.get(lease.proxy);
      let fresh = !base;
      for (;;) {
        if (!base || fresh) base = await this.readState(lease.proxy);
        const now = this.clock.now();
        const entry = base.entries && activeEntries(base.entries, now).find((e) => e.leaseId === leaseId);
        if (!base.entries || !entry) {
          if (!fresh) {
            fresh = true;
            continue;
          }
          const latest = (await this.find(leaseId)) ?? lease;
          return latest.releasedAt ? { kind: 'released', lease: latest } : { kind: 'expired', lease: latest };
        }
        const expiresAt = renewedExpiry(entry, ttl, now);
        const entries = extendEntry(base.entries, leaseId, expiresAt, now) ?? [];
        const renewed: Lease = { ...lease, expiresAt, ttlSeconds: ttl, renewals: lease.renewals + 1 };
        const update = {
          expiresAt: Timestamp.fromDate(expiresAt),
          ttlSeconds: ttl,
          renewals: FieldValue.increment(1),
          [TTL_FIELD]: Timestamp.fromDate(resolvableUntil(renewed, this.settings)),
        };
        const ok = await this.commit(lease.proxy, base, entries, now, budget, (b) =>
          b.update(this.leaseRef(leaseId), update),
        );
        if (ok) return { kind: 'renewed', lease: renewed };
        fresh = true;
      }
    });
  }

  async find(leaseId: string): Promise<Lease | null> {
    const snap = await this.call('read lease', () => this.leaseRef(leaseId).get());
    if (!snap.exists) return null;
    const lease = decodeLease(snap.data());
    if (!lease) this.log('ERROR', 'malformed lease document', { leaseId });
    return lease;
  }

  async startCooldown(cooldown: Cooldown): Promise<void> {
    const id = cooldownDocId(cooldown.proxy, cooldown.target);
    await this.call('write cooldown', () =>
      this.db.collection(LEASE_COLLECTIONS.cooldowns).doc(id).set(encodeCooldown(cooldown)),
    );
    this.cooldowns.put(id, cooldown);
  }

  /** One preconditioned write of a proxy's state (+ its lease document); false on a lost race. */
  private async commit(
    proxy: string,
    base: StateBase,
    entries: readonly LeaseEntry[],
    now: Date,
    budget: Budget,
    withLease: (batch: WriteBatch) => void,
  ): Promise<boolean> {
    if (++budget.commits > this.maxCommits) {
      throw new LeaseStoreError('contended', `no commit on ${proxy} after ${this.maxCommits} attempts`);
    }
    if (budget.commits > 1) await jitteredBackoff(budget.commits - 1);
    const batch = this.db.batch();
    const ref = this.stateRef(proxy);
    const data = encodeState(proxy, entries, now);
    if (base.version) batch.update(ref, data, { lastUpdateTime: base.version });
    else batch.create(ref, data);
    withLease(batch);
    try {
      const [result] = await batch.commit();
      if (result) this.state.put(proxy, { entries, version: result.writeTime });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      if (isTransient(err)) {
        this.log('WARNING', 'lease state commit failed transiently; retrying from a fresh read', {
          proxy,
          code: (err as { code?: unknown }).code,
        });
        return false;
      }
      throw new LeaseStoreError('unavailable', `committing lease state of ${proxy}`, { cause: err });
    }
  }

  private async readState(proxy: string): Promise<StateBase> {
    const snap = await this.call('read lease state', () => this.stateRef(proxy).get());
    if (!snap.exists) return { entries: [], version: null };
    const entries = decodeState(snap.data());
    if (!entries) this.log('ERROR', 'malformed lease state: proxy treated as full', { proxy });
    const base: StateBase = { entries, version: snap.updateTime ?? null };
    this.state.put(proxy, base);
    return base;
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new LeaseStoreError('unavailable', what, { cause: err });
    }
  }

  private leaseRef(id: string) {
    return this.db.collection(LEASE_COLLECTIONS.leases).doc(id);
  }

  private stateRef(proxy: string) {
    return this.db.collection(LEASE_COLLECTIONS.leaseState).doc(proxy);
  }
}
