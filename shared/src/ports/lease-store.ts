// The ports the discovery + lease service (seed §7) depends on. The seed kept leases in one process
// behind one lock; here they are durable and shared by every replica, so the store's grant is the one
// place where "never beyond capacity" is decided, atomically with the lease record.
import type { Usage } from '../domain/leases/capacity.js';
import type { IdempotencyRecord } from '../domain/leases/idempotency.js';
import type { ProxyInstance } from '../domain/leases/instance.js';
import type { Cooldown, Lease } from '../domain/leases/model.js';
import type { Candidate } from '../domain/leases/selection.js';
import type { ProxyResource } from '../domain/proxy.js';

/** Proxies as a continuously refreshed local view (seed: "Reader.List(Proxies) ── manager cache"). */
export interface ProxyCatalog {
  /** Resolves once the first full view has loaded; rejects after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void>;
  list(): readonly ProxyResource[];
  get(name: string): ProxyResource | undefined;
}

export interface NewLease {
  id: string;
  target: string | null;
  exclusive: boolean;
  holder: string;
  ttlSeconds: number;
  /** The acquire's Idempotency-Key record, written in the same commit as the lease (or the commit fails). */
  key?: KeyIntent;
}

/** The store's version of a key record, to write over it only if it is still the one that was read. */
export type KeyVersion = { readonly __keyVersion: unique symbol };

/** A stored Idempotency-Key record (domain/leases/idempotency.ts) and its version. */
export interface StoredKey extends IdempotencyRecord {
  version: KeyVersion;
  /** When the grant it names wrote it (the granting replica's clock). */
  grantedAt: Date;
  /**
   * A replay has answered with its lease (markReplayed): the crawler may hold it from that answer, so the
   * delivery that granted it no longer gives it back.
   */
  replayed: boolean;
}

/** A key record to delete with a given-back grant: only while it is still this version. */
export interface KeyDrop {
  recordId: string;
  version: KeyVersion;
}

export interface KeyIntent {
  /** idempotencyRecordId(holder, key). */
  recordId: string;
  requestHash: string;
  /** Until when the record answers (and its TTL field). */
  expiresAt: Date;
  /**
   * The record read before, past its window (written over only while it is still that version), or null:
   * none was read (created only if there is still none). Either fails the commit when another request
   * wrote the record meanwhile: the grant then answers `key_taken`.
   */
  replaces: KeyVersion | null;
}

export interface GrantRequest {
  /** Best first; the store grants on the first one that has room when it commits. */
  candidates: readonly Candidate[];
  lease: NewLease;
  /**
   * Whether the lease service's ownership view has caught up with the snapshot planner's claim of epoch
   * `claimEpoch` on the proxy and found it released since (OwnershipGate.claimSettled). A candidate whose
   * stored state carries a claim not settled is not granted. Absent: every claim holds (fail closed).
   */
  claimSettled?: (proxy: string, claimEpoch: number, uid?: string) => boolean;
}

export type GrantOutcome =
  | { kind: 'granted'; lease: Lease }
  /**
   * Every candidate turned out full when checked against the stored state (`atCapacity`), or claimed by
   * the snapshot planner for a gateway worker after it was selected (`inGateway`).
   */
  | { kind: 'no_room'; atCapacity: number; inGateway: number }
  /**
   * The request's key record was written by another request (one delivering the same key) since it was
   * read: nothing was granted; read the record again.
   */
  | { kind: 'key_taken' };

export type RenewOutcome =
  | { kind: 'renewed'; lease: Lease }
  | { kind: 'unknown' }
  | { kind: 'expired'; lease: Lease }
  | { kind: 'released'; lease: Lease }
  /** Active, but its proxy may no longer be leased (being deleted, gone, or held by the gateway). */
  | { kind: 'withdrawn'; lease: Lease };

/**
 * Sites one lease may start cooldowns for (each its own document, read by every API replica's listener):
 * a report for one more is accepted and starts none (docs/leases.md § Leases). A crawler sends one
 * `target` per lease; 32 leaves room for one that reports the sites it reaches through it. Besides them,
 * never capped: the proxy-wide cooldown and the one for the lease's own target.
 */
export const COOLDOWN_SITES_PER_LEASE = 32;

export type CooldownStart = 'started' | 'capped' | 'unknown_lease';

/** The store's version of a lease document, to write it only if it is still the one that was read. */
export type LeaseVersion = { readonly __leaseVersion: unique symbol };

/**
 * A lease as a report reads it: with the sites it has started cooldowns for, and its document's version —
 * what startCooldown needs, so that a report reads its lease once.
 */
export interface ReportedLease {
  lease: Lease;
  cooldownSites: readonly string[];
  version: LeaseVersion;
}

export interface LeaseStore {
  /** Resolves once the local views of lease state and cooldowns have loaded. */
  ready(timeoutMs: number): Promise<void>;
  /**
   * A proxy's leases as this replica last saw them (its own writes at once; other replicas' when it last
   * read), for ranking and listing. Capacity itself is enforced by grant, never by this view. Only the
   * leases of this instance count (domain/leases/instance.ts), not those of a deleted proxy of its name.
   */
  usage(proxy: ProxyInstance, now: Date): Usage;
  /**
   * Re-reads the states of these proxies that this replica has not seen recently, so that usage() may
   * answer "full" or be listed; resolves to how many it read (0: the view was recent enough). `limit`:
   * at most that many reads, of the states seen longest ago (successive calls take the next ones).
   */
  refresh(proxies: readonly string[], limit?: number): Promise<number>;
  /** Writes (grants, releases, renewals) this replica has in flight on the proxy: ranked like leases. */
  pending(proxy: string): number;
  /** Active leases over all proxies, from the stored leases (for the leases_active gauge). */
  countActive(): Promise<number>;
  /** Whether a cooldown keeps this proxy instance out for `target` (not one of a deleted namesake). */
  coolingDown(proxy: ProxyInstance, target: string | null, now: Date): boolean;
  /** When the cooldowns coolingDown() sees end, or null when none holds. */
  cooldownEnd(proxy: ProxyInstance, target: string | null, now: Date): Date | null;
  grant(request: GrantRequest): Promise<GrantOutcome>;
  /**
   * Extends an active lease to now + ttlSeconds (default: its own TTL); never shortens it. An active lease
   * that `renewable` refuses (its proxy gone, being deleted, replaced by another of the same name, or held
   * by the gateway) is left as it is: `withdrawn`.
   */
  renew(leaseId: string, ttlSeconds?: number, renewable?: (lease: Lease) => boolean): Promise<RenewOutcome>;
  /**
   * Idempotent: releasing an unknown, expired or released lease changes nothing. `dropKey`: a grant given
   * back by an acquire, whose key must not count as spent — the key record naming this lease is deleted in
   * the same write, and only while it is still that version: once another delivery of the key has written
   * it (a replay answered with the lease, or a new grant) nothing is released or deleted and the answer is
   * false. A lease already ended takes its record with it all the same (or the key would answer
   * `key_spent` for a lease nobody got). True otherwise.
   */
  release(leaseId: string, opts?: { dropKey?: KeyDrop }): Promise<boolean>;
  /** The acquire key record `recordId`, or null when there is none (or it does not decode). */
  findKey(recordId: string): Promise<StoredKey | null>;
  /**
   * Marks the key record as replayed, before a replay answers with its lease — only while it is still
   * `version`; false when another delivery has written or deleted it since (read it again).
   */
  markReplayed(recordId: string, version: KeyVersion): Promise<boolean>;
  /** The stored lease, whatever its state, or null when there is none (or its record has been removed). */
  find(leaseId: string): Promise<Lease | null>;
  /** As find, with what startCooldown needs of the lease document. */
  findForReport(leaseId: string): Promise<ReportedLease | null>;
  /**
   * Writes the cooldown, and records its site (`cooldown.target`) on its lease (`read`, as findForReport
   * answered it): `capped` — nothing written — when the lease has started cooldowns for
   * COOLDOWN_SITES_PER_LEASE other sites already; `unknown_lease` when its lease document is gone. The
   * proxy-wide cooldown (GLOBAL_TARGET) and the lease's own site are never capped, nor recorded
   * (domain/leases/cooldown-sites.ts).
   */
  startCooldown(cooldown: Cooldown, read: ReportedLease): Promise<CooldownStart>;
  stop(): Promise<void>;
}

export class LeaseStoreError extends Error {
  /**
   * A grant's candidates passed over unread (their states unknown to this replica, past the read bound):
   * candidates further down, or left out of the plan, may have room. Else 0.
   */
  readonly unread: number;
  constructor(
    /** unavailable: the backend failed or timed out; contended: bounded retries ran out under contention. */
    readonly kind: 'unavailable' | 'contended' | 'not_ready',
    message: string,
    options?: { cause?: unknown; unread?: number },
  ) {
    super(message, options);
    this.name = 'LeaseStoreError';
    this.unread = options?.unread ?? 0;
  }
}
