// OwnershipStore on Firestore. `ownership/state` holds the global epoch and the planner lock;
// `ownership/shard-NN` (16 of them, by a stable hash of the proxy name) hold `proxies.<name> = {owner,
// since, drainEpoch, uid}`. Sharding keeps a pass at 17 reads however large the pool, and lets every change of a
// pass commit in ONE batch together with the epoch, guarded by the state document's updateTime — so two
// planners can never interleave (recipes §7: a precondition on a single state document).
// Each call is given up at the store's deadline, when it has one (worker-deadline.ts; the API sets one, and
// calls only epoch() and read()): a write given up is unavailable, an unknown outcome, and goes through the
// same check of its own landing as a DEADLINE_EXCEEDED (lockLanded, committed, againOnOwnLock).
import { randomUUID } from 'node:crypto';
import { FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import type { OwnershipChange, OwnershipRecord } from '../../domain/workers/ownership.js';
import { hash53 } from '../../domain/workers/rendezvous.js';
import type { OwnershipState, OwnershipStore } from '../../ports/workers-ownership.js';
import { Collections } from './collections.js';
import { LEASE_COLLECTIONS } from './lease-collections.js';
import { encodeClaimedState, encodeGatewayClaim } from './lease-converter.js';
import { boundedCall, type WorkerStoreDeadlines } from './worker-deadline.js';
import {
  ALREADY_EXISTS,
  codeOf,
  FAILED_PRECONDITION,
  requireTimestamp,
  versionOf,
  workerStoreFailure,
} from './worker-errors.js';

export const OWNERSHIP_SHARDS = 16;
export const STATE_DOC = 'state';
export const shardOf = (proxy: string): number => hash53(proxy) % OWNERSHIP_SHARDS;
export const shardDocId = (n: number): string => `shard-${String(n).padStart(2, '0')}`;

const int = z.number().int();
const StateDoc = z.object({
  epoch: int.min(0),
  lock: z
    .object({ holder: z.string(), until: z.instanceof(Timestamp).transform((t) => t.toDate()) })
    .nullable()
    .default(null),
});
const RecordDoc = z.object({
  owner: z.string().min(1),
  since: int,
  drainEpoch: int.nullable(),
  // Kept since the planner tells a proxy from one created again under its name (ownership.ts); absent on
  // records stored before, and on a hand-edited one that does not fit, which is then taken for the name's.
  uid: z.string().min(1).nullish().catch(null),
});
const ShardDoc = z.object({ proxies: z.record(z.string(), z.unknown()).default({}) });
type StateLock = { lock: z.infer<typeof StateDoc>['lock']; version: Timestamp };
/** Writes of a pass's own lock again on the version read, after its first one failed. */
const OWN_LOCK_RETRIES = 2;

export class FirestoreOwnershipStore implements OwnershipStore {
  private readonly callDeadlineMs: number | undefined;

  /** `opts.callDeadlineMs`: the bound of each call (read() is 17 documents: no listing). */
  constructor(
    private readonly db: Firestore,
    opts: WorkerStoreDeadlines = {},
  ) {
    this.callDeadlineMs = opts.callDeadlineMs;
  }

  /** `call`, given up at the call deadline (when set) as WorkerStoreError('unavailable'). */
  private bounded<T>(what: string, call: () => Promise<T>): Promise<T> {
    return boundedCall(this.callDeadlineMs, what, call);
  }

  private col() {
    return this.db.collection(Collections.ownership);
  }

  async epoch(): Promise<number> {
    try {
      const snap = await this.bounded('read the ownership epoch', () => this.col().doc(STATE_DOC).get());
      return snap.exists ? StateDoc.parse(snap.data()).epoch : 0;
    } catch (err) {
      throw workerStoreFailure(err, 'read the ownership epoch');
    }
  }

  async read(): Promise<OwnershipState> {
    const refs = [STATE_DOC, ...Array.from({ length: OWNERSHIP_SHARDS }, (_, i) => shardDocId(i))].map((id) =>
      this.col().doc(id),
    );
    let snaps: FirebaseFirestore.DocumentSnapshot[];
    try {
      snaps = await this.bounded('read ownership', () => this.db.getAll(...refs));
    } catch (err) {
      throw workerStoreFailure(err, 'read ownership');
    }
    const [state, ...shards] = snaps;
    const parsed = state?.exists ? StateDoc.safeParse(state.data()) : null;
    if (parsed && !parsed.success) throw workerStoreFailure(parsed.error, 'ownership/state does not fit');
    const records = new Map<string, OwnershipRecord>();
    for (const shard of shards) {
      if (!shard.exists) continue;
      const fits = ShardDoc.safeParse(shard.data());
      if (!fits.success) throw workerStoreFailure(fits.error, `ownership/${shard.id} does not fit`);
      for (const [proxy, raw] of Object.entries(fits.data.proxies)) {
        // A hand-edited entry that does not fit keeps the owner it names, if it names one — never silently
        // unowned, which could hand the proxy to a second worker while the first still serves it: the
        // planner drains it from that owner (drainEpoch 0: at once) and releases it like any other. With
        // no owner to read at all it is owned by "?", a worker that never reports: released once "?"'s
        // grant has lapsed, which it has (a proxy in a live worker's snapshot may then have two owners
        // until that snapshot's grant lapses).
        const r = RecordDoc.safeParse(raw);
        const named = (raw as { owner?: unknown } | null)?.owner;
        const owner = typeof named === 'string' && named.length > 0 ? named : '?';
        records.set(proxy, r.success ? { proxy, ...r.data } : { proxy, owner, since: 0, drainEpoch: 0 });
      }
    }
    return {
      epoch: parsed?.data.epoch ?? 0,
      lock: parsed?.data.lock ?? null,
      records,
      token: state?.exists ? versionOf(state.updateTime!) : null,
    };
  }

  async acquireLock(holder: string, now: Date, until: Date): Promise<string | null> {
    const ref = this.col().doc(STATE_DOC);
    try {
      const what = 'take the planner lock';
      const snap = await this.bounded(what, () => ref.get());
      const lock = { holder, until: Timestamp.fromDate(until) };
      if (!snap.exists) {
        const w = await this.bounded(what, () =>
          ref.create({ epoch: 0, lock, updatedAt: Timestamp.fromDate(now) }),
        );
        return versionOf(w.writeTime);
      }
      const state = StateDoc.parse(snap.data());
      if (state.lock && state.lock.holder !== holder && state.lock.until.getTime() > now.getTime())
        return null;
      // The last commit's id goes with a lock taken anew: a resent commit of the pass before must not read
      // this lock's version as its own (committed()).
      const w = await this.bounded(what, () =>
        ref.update({ lock, commitId: FieldValue.delete() }, { lastUpdateTime: snap.updateTime! }),
      );
      return versionOf(w.writeTime);
    } catch (err) {
      const code = codeOf(err);
      if (code === ALREADY_EXISTS || code === FAILED_PRECONDITION) return this.lockLanded(holder, until);
      // Landed, then the call failed otherwise (DEADLINE_EXCEEDED, a last UNAVAILABLE), as extendLock
      // below: thrown, the pass failed holding a lock nobody owned, and the planner was busy for `lockMs`.
      const landed = await this.lockLanded(holder, until);
      if (landed) return landed;
      throw workerStoreFailure(err, 'take the planner lock');
    }
  }

  /**
   * Moves the expiry of a lock `holder` holds to `until`, only while it is still `holder`'s: a lock that
   * lapsed and was taken by another pass — even one that has given it back since — is not taken again,
   * since that pass may have moved the proxies this one planned on. Returns the new version, or null when
   * the lock is no longer `holder`'s.
   *
   * Written first on `token` (the version its holder's last write left). When the state moved on from it, or
   * the call failed (DEADLINE_EXCEEDED, a last UNAVAILABLE), the state is read: a lock that still names
   * `holder` is this pass's — a holder is one pass's, and only acquireLock changes it —, moved on only by
   * its own write that landed unanswered after the check of it (an extension, a commit): extended on the
   * version read. Read as lost, the pass stopped, failed every step it had not started, and its release on
   * the stale version was refused: its own lock held the planner off for `lockMs`.
   */
  async extendLock(holder: string, token: string, until: Date): Promise<string | null> {
    const ref = this.col().doc(STATE_DOC);
    const lock = { holder, until: Timestamp.fromDate(until) };
    let failure: unknown;
    try {
      const lastUpdateTime = requireTimestamp(token);
      return versionOf(
        (await this.bounded('extend the planner lock', () => ref.update({ lock }, { lastUpdateTime })))
          .writeTime,
      );
    } catch (err) {
      failure = err;
    }
    return this.againOnOwnLock(
      holder,
      failure,
      'extend the planner lock',
      {
        notOurs: null,
        readFailed: (f) => {
          // Not known: a conflict stands as taken by another; a failed call is thrown (the next beat tries).
          if (codeOf(f) === FAILED_PRECONDITION) return null;
          throw workerStoreFailure(f, 'extend the planner lock');
        },
        // This very extension, landed (resent after its answer was lost, or before its call failed).
        landed: (seen) => (seen.until.getTime() === until.getTime() ? versionOf(seen.version) : undefined),
      },
      async (version) =>
        versionOf(
          (
            await this.bounded('extend the planner lock', () =>
              ref.update({ lock }, { lastUpdateTime: version }),
            )
          ).writeTime,
        ),
    );
  }

  /**
   * After a write of `holder`'s lock failed on its token (the state moved on, or the call failed): the
   * state is read, and while the lock still names `holder` — moved on only by a write of its own that
   * landed unanswered — `write` is made again on the version read, at most OWN_LOCK_RETRIES times. The lock
   * another's or free: `notOurs`; the read failing: `readFailed`; `landed` answers for a write that needs
   * no repeat.
   */
  private async againOnOwnLock<T>(
    holder: string,
    firstFailure: unknown,
    what: string,
    on: {
      notOurs: T;
      readFailed: (failure: unknown) => T;
      landed?: (seen: { until: Date; version: Timestamp }) => T | undefined;
    },
    write: (version: Timestamp) => Promise<T>,
  ): Promise<T> {
    let failure = firstFailure;
    for (let attempt = 0; ; attempt++) {
      let seen: StateLock | null;
      try {
        seen = await this.stateLock();
      } catch {
        return on.readFailed(failure);
      }
      if (!seen?.lock || seen.lock.holder !== holder) return on.notOurs;
      const landed = on.landed?.({ until: seen.lock.until, version: seen.version });
      if (landed !== undefined) return landed;
      if (attempt === OWN_LOCK_RETRIES) throw workerStoreFailure(failure, what);
      try {
        return await write(seen.version);
      } catch (err) {
        failure = err;
      }
    }
  }

  /** The lock on the state and the state's version; null when there is no state. Throws when not read. */
  private async stateLock(): Promise<StateLock | null> {
    const snap = await this.bounded('read the planner lock', () => this.col().doc(STATE_DOC).get());
    if (!snap.exists) return null;
    return { lock: StateDoc.safeParse(snap.data()).data?.lock ?? null, version: snap.updateTime! };
  }

  /**
   * After a take of the lock failed: the version of the lock this very write took, when it landed on an
   * attempt whose answer was lost and the client resent it (UNAVAILABLE, ABORTED), or landed before its call
   * failed (DEADLINE_EXCEEDED) — else null, taken by another, or not landed. Without it the pass gave up,
   * and its own lock held the planner off for `lockMs`.
   */
  private async lockLanded(holder: string, until: Date): Promise<string | null> {
    try {
      const snap = await this.bounded('read the planner lock', () => this.col().doc(STATE_DOC).get());
      const lock = snap.exists ? StateDoc.safeParse(snap.data()).data?.lock : null;
      return lock && lock.holder === holder && lock.until.getTime() === until.getTime()
        ? versionOf(snap.updateTime!)
        : null;
    } catch {
      return null; // not known: as before the check, taken by another
    }
  }

  async commit(
    changes: readonly OwnershipChange[],
    epoch: number,
    token: string,
    now: Date,
    leaseVersions: ReadonlyMap<string, string | null> = new Map(),
    options: { holdEpoch?: boolean } = {},
  ): Promise<string> {
    const batch = this.db.batch();
    // Only an assignment needs a claim: a proxy passed from a lapsed owner to a new one, or whose drain is
    // cancelled, was owned throughout, so no lease service could grant it meanwhile.
    for (const c of changes) {
      if (c.kind !== 'assigned' || !c.next || !leaseVersions.has(c.proxy)) continue;
      const ref = this.db.collection(LEASE_COLLECTIONS.leaseState).doc(c.proxy);
      const version = leaseVersions.get(c.proxy) ?? null;
      if (version === null) batch.create(ref, encodeClaimedState(c.proxy, epoch, c.next.owner, now));
      else
        batch.update(ref, encodeGatewayClaim(epoch, c.next.owner, now), {
          lastUpdateTime: requireTimestamp(version),
        });
    }
    const byShard = new Map<number, Record<string, unknown>>();
    for (const c of changes) {
      const n = shardOf(c.proxy);
      const entries = byShard.get(n) ?? {};
      entries[c.proxy] = c.next
        ? {
            owner: c.next.owner,
            since: c.next.since,
            drainEpoch: c.next.drainEpoch,
            // A merge: a record given to a proxy whose uid is not known drops the one stored before.
            uid: c.next.uid ? c.next.uid : FieldValue.delete(),
          }
        : FieldValue.delete();
      byShard.set(n, entries);
    }
    for (const [n, proxies] of byShard) {
      batch.set(this.col().doc(shardDocId(n)), { shard: n, proxies }, { merge: true });
    }
    // Held: the state is still written (its new version guards the next commit), its epoch is not. It
    // carries the commit's id: a commit the client resent after it landed (its answer lost: UNAVAILABLE,
    // ABORTED) fails on its own write, and the id says it is there — not a lost race, whose re-plan would
    // find the state moved by this very commit and give the lock up as lost.
    const commitId = randomUUID();
    const stamp = { updatedAt: Timestamp.fromDate(now), commitId };
    batch.update(this.col().doc(STATE_DOC), options.holdEpoch ? stamp : { epoch, ...stamp }, {
      lastUpdateTime: requireTimestamp(token),
    });
    try {
      const results = await this.bounded('commit ownership', () => batch.commit());
      return versionOf(results[results.length - 1]!.writeTime);
    } catch (err) {
      // Landed whatever the failure says: a resend failing its own precondition, or a commit whose call
      // failed otherwise after it landed (DEADLINE_EXCEEDED, a last UNAVAILABLE), as with the lock above.
      // Thrown, the epoch moved with no snapshot of it, every worker's ACK at the old one was stale, and
      // the pass's release (on the version before the commit) failed: the planner busy for `lockMs`.
      const landed = await this.committed(commitId);
      if (landed) return landed;
      throw workerStoreFailure(err, 'commit ownership');
    }
  }

  /**
   * The state's version when the commit `commitId` is the last that wrote it (atomic: all of it landed;
   * a lock taken since drops the id, acquireLock). null when not, or not known (the read failed: the
   * conflict stands, as before the check).
   */
  private async committed(commitId: string): Promise<string | null> {
    try {
      const snap = await this.bounded('read the ownership state', () => this.col().doc(STATE_DOC).get());
      return snap.exists && snap.get('commitId') === commitId ? versionOf(snap.updateTime!) : null;
    } catch {
      return null;
    }
  }

  /**
   * Gives the lock up while it is `holder`'s. Written first on `token`; when the state moved on from it, or
   * the call failed, the state is read: a lock another pass took after ours lapsed is theirs, nothing to give
   * up; one that still names `holder` is this pass's (extendLock), moved on by its own write that landed
   * unanswered — given up on the version read. On `token` alone it was kept, the refusal taken for another
   * pass's lock and not even logged, and it held the planner off for `lockMs`: the retries of the pass's
   * failed steps found it busy. Throws when it stays `holder`'s (the caller logs it; it lapses on its own).
   */
  async releaseLock(holder: string, token: string): Promise<void> {
    const ref = this.col().doc(STATE_DOC);
    let failure: unknown;
    try {
      const lastUpdateTime = requireTimestamp(token);
      await this.bounded('release the planner lock', () => ref.update({ lock: null }, { lastUpdateTime }));
      return;
    } catch (err) {
      failure = err;
    }
    // Not ours: given up (a release that landed unanswered), or another's.
    await this.againOnOwnLock(
      holder,
      failure,
      'release the planner lock',
      {
        notOurs: undefined,
        readFailed: (f) => {
          throw workerStoreFailure(f, 'release the planner lock');
        },
      },
      async (version) => {
        await this.bounded('release the planner lock', () =>
          ref.update({ lock: null }, { lastUpdateTime: version }),
        );
      },
    );
  }
}
