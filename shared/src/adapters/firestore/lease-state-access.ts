// Reads and preconditioned writes of leaseState/{proxy}, keeping this replica's view (LeaseStateCache)
// in step with both. The write is the heart of the capacity invariant: a proxy's new entries are
// committed only if the document is still at the version they were computed from (lastUpdateTime
// precondition; create when there was none), in one batch with the lease document's change. Writes of
// different proxies that arrive together share a commit (group-commit.ts), each keeping its precondition.
import {
  type DocumentReference,
  FieldValue,
  type Firestore,
  type Timestamp,
  type WriteBatch,
} from '@google-cloud/firestore';
import type { LeaseEntry } from '../../domain/leases/model.js';
import { LeaseStoreError } from '../../ports/lease-store.js';
import { boundFirestoreCall } from '../deadline.js';
import type { Logger } from '../log/json-logger.js';
import { type GroupCommitOptions, GroupCommitter } from './group-commit.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { encodeState, GATEWAY_CLAIM_FIELD } from './lease-converter.js';
import { isConflict, isTransient, jitteredBackoff } from './lease-errors.js';
import type { LeaseStateCache, StateBase } from './lease-state-cache.js';

/** Documents per BatchGetDocuments call when a listing refreshes a large fleet. */
const GET_ALL_CHUNK = 300;

/**
 * How long one Firestore call of the lease store may take before its request answers 503 unavailable.
 * The client's own deadlines (60 s a commit, 300 s a read) are longer than Cloud Run's request timeout,
 * and a call under a proxy's lock (lease-keyed-lock.ts) holds every grant, renewal and release of that
 * proxy on the replica behind it: a degraded Firestore answered none of them until the front end gave up.
 */
export const STORE_CALL_DEADLINE_MS = 5_000;

/** A document written in the same commit as a proxy's state: its lease's, an acquire's Idempotency-Key record. */
export interface DocumentWrite {
  ref: DocumentReference;
  write: (batch: WriteBatch, ref: DocumentReference) => void;
}

/** Shared by the attempts of one request, across candidates. */
export interface Budget {
  commits: number;
  /** Commits given back (refund): lost to a view out of date, not to contention. */
  refunds?: number;
  /**
   * How the last commit that returned false failed: `conflict`, its precondition (it did not land, or a
   * resend of one that did, which a read now shows); `transient`, an error after which it may still land
   * unseen by the next read.
   */
  lastLoss?: 'conflict' | 'transient';
}

export class LeaseStateAccess {
  private readonly inflight = new Map<string, Promise<void>>();
  readonly committer: GroupCommitter<WriteBatch, Timestamp>;

  constructor(
    private readonly db: Firestore,
    private readonly cache: LeaseStateCache,
    /** When a state is learned (its view's age, lease-state-cache.ts StateClocks): monotonic ms. */
    private readonly monotonicNow: () => number,
    private readonly log: Logger,
    private readonly maxCommits: number,
    groupCommit: GroupCommitOptions = {},
  ) {
    // A combined commit failed by one caller's stale precondition is split; Firestore being overloaded
    // or away is everyone's answer at once, and each backs off from there (commit() below).
    this.committer = new GroupCommitter(() => db.batch(), { splitOn: isConflict, ...groupCommit });
  }

  /**
   * One read of the whole collection: a starting replica's view. Not bounded by STORE_CALL_DEADLINE_MS —
   * a large fleet's states may take longer. Each request waits on it for ready()'s timeout, and a new one
   * starts only once it has gone unanswered for LOAD_PENDING_MS (lease-store.ts).
   */
  async loadAll(): Promise<void> {
    const seenAt = this.monotonicNow();
    const snap = await guard(
      'load lease states',
      () => this.db.collection(LEASE_COLLECTIONS.leaseState).get(),
      null,
    );
    for (const doc of snap.docs) this.cache.put(doc.id, this.cache.decode(doc), seenAt);
  }

  /** The stored state now (and into the view). */
  async read(proxy: string): Promise<StateBase> {
    const seenAt = this.monotonicNow();
    const snap = await guard('read lease state', () => this.ref(proxy).get());
    const base: StateBase = snap.exists ? this.cache.decode(snap) : { entries: [], version: null };
    this.cache.put(proxy, base, seenAt);
    return base;
  }

  /**
   * Re-reads, in one call, the states this replica learned more than `maxAgeMs` ago (reads already in
   * flight are shared) — at most `limit` of them, those learned longest ago. Resolves to the number of
   * proxies read for it — by this call or by a read it waited on: a caller that shared another's read has
   * a fresh view too, and must look again.
   */
  async refresh(
    proxies: readonly string[],
    maxAgeMs: number,
    limit = Number.POSITIVE_INFINITY,
  ): Promise<number> {
    const waits: Promise<void>[] = [];
    const aged: Array<{ proxy: string; age: number }> = [];
    let shared = 0;
    for (const p of new Set(proxies)) {
      const pending = this.inflight.get(p);
      if (pending) {
        waits.push(pending);
        shared++;
        continue;
      }
      const age = this.cache.ageMs(p);
      if (age > maxAgeMs) aged.push({ proxy: p, age });
    }
    const stale = (aged.length > limit ? aged.sort((a, b) => b.age - a.age).slice(0, limit) : aged).map(
      (a) => a.proxy,
    );
    if (stale.length > 0) {
      const batch = (async () => {
        const seenAt = this.monotonicNow();
        const refs = stale.map((p) => this.ref(p));
        const chunks = Array.from({ length: Math.ceil(refs.length / GET_ALL_CHUNK) }, (_, i) =>
          refs.slice(i * GET_ALL_CHUNK, (i + 1) * GET_ALL_CHUNK),
        );
        const snaps = (
          await guard('refresh lease states', () => Promise.all(chunks.map((c) => this.db.getAll(...c))))
        ).flat();
        for (const snap of snaps) {
          const base: StateBase = snap.exists ? this.cache.decode(snap) : { entries: [], version: null };
          this.cache.put(snap.id, base, seenAt);
        }
      })();
      const done = batch.finally(() => {
        for (const p of stale) if (this.inflight.get(p) === done) this.inflight.delete(p);
      });
      for (const p of stale) this.inflight.set(p, done);
      waits.push(done);
    }
    await Promise.all(waits);
    return stale.length + shared;
  }

  /**
   * Gives back a commit lost to a view out of date (a proxy filled or claimed meanwhile), so that stale
   * views of many proxies do not use up the budget before a candidate with room is tried — at most
   * maxCommits times a request: its commits stay bounded (2 × maxCommits) however stale the replica's view.
   */
  refund(budget: Budget): void {
    const refunds = budget.refunds ?? 0;
    if (budget.commits === 0 || refunds >= this.maxCommits) return;
    budget.commits--;
    budget.refunds = refunds + 1;
  }

  /**
   * One preconditioned write of a proxy's state, with `others` (its lease document, an Idempotency-Key
   * record: a failed precondition of one of them loses the race too); false on a lost race.
   * `clearClaim`: the write also removes the planner's claim on the proxy (a grant that found it settled).
   */
  async commit(
    proxy: string,
    base: StateBase,
    entries: readonly LeaseEntry[],
    now: Date,
    budget: Budget,
    others: readonly DocumentWrite[],
    clearClaim = false,
  ): Promise<boolean> {
    if (++budget.commits > this.maxCommits) {
      throw new LeaseStoreError('contended', `no commit on ${proxy} after ${this.maxCommits} attempts`);
    }
    if (budget.commits > 1) await jitteredBackoff(budget.commits - 1);
    const ref = this.ref(proxy);
    const clearing = clearClaim && base.version !== null && (base.gatewayClaim ?? null) !== null;
    const data = encodeState(proxy, entries, now);
    if (clearing) data[GATEWAY_CLAIM_FIELD] = FieldValue.delete();
    // Given up at the deadline: writes still queued behind a stalled Firestore are never sent (a grant
    // landing after its request answered 503 would be a lease nobody holds).
    const givenUp = new AbortController();
    try {
      const paths = [ref.path, ...others.map((o) => o.ref.path)];
      const commit = () =>
        this.committer.commit(
          paths,
          (batch) => {
            if (base.version) batch.update(ref, data, { lastUpdateTime: base.version });
            else batch.create(ref, data);
            for (const o of others) o.write(batch, o.ref);
            return 1 + others.length;
          },
          givenUp.signal,
        );
      // Past the deadline the commit may still land, as one whose answer was lost: an acquire retried
      // under its Idempotency-Key gets that grant, a release retried finds it done.
      const [state] = await bounded(commit, `committing lease state of ${proxy}`);
      // Unless cleared, the write leaves a planner's claim as it was (update touches the fields it names;
      // create only when there was no document, hence no claim).
      if (state)
        this.cache.put(
          proxy,
          { entries, version: state.writeTime, gatewayClaim: clearing ? null : (base.gatewayClaim ?? null) },
          this.monotonicNow(),
        );
      return true;
    } catch (err) {
      if (isConflict(err)) {
        budget.lastLoss = 'conflict';
        return false;
      }
      if (isTransient(err)) {
        budget.lastLoss = 'transient';
        this.log.warn('lease state commit failed transiently; retrying from a fresh read', {
          proxy,
          error: err,
        });
        return false;
      }
      throw new LeaseStoreError('unavailable', `committing lease state of ${proxy}`, { cause: err });
    } finally {
      givenUp.abort(); // a commit sent or settled is not affected: only writes still queued are dropped
    }
  }

  private ref(proxy: string) {
    return this.db.collection(LEASE_COLLECTIONS.leaseState).doc(proxy);
  }
}

/**
 * A Firestore call given up after `ms` (it runs on; its answer is dropped). `call` starts it: inside a
 * spent request budget it is never made, so "not sent" is true and no orphaned call can reject unheard.
 */
export function bounded<T>(call: () => Promise<T>, what: string, ms = STORE_CALL_DEADLINE_MS): Promise<T> {
  return boundFirestoreCall(ms, what, call, (m) => new Error(m));
}

/** Any failure of `fn`, or no answer within `deadlineMs` (null: the caller bounds it), is 503 unavailable. */
export async function guard<T>(
  what: string,
  fn: () => Promise<T>,
  deadlineMs: number | null = STORE_CALL_DEADLINE_MS,
): Promise<T> {
  try {
    return deadlineMs === null ? await fn() : await bounded(fn, what, deadlineMs);
  } catch (err) {
    throw new LeaseStoreError('unavailable', what, { cause: err });
  }
}
