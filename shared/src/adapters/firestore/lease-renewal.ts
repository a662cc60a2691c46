// A lease's renewal (LeaseStore.renew): its entry's expiry moved in its proxy's state, committed with the
// lease document preconditioned on the version read, each renewal counted once however its commit fared.
import { randomBytes } from 'node:crypto';
import { FieldValue, type Firestore, Timestamp } from '@google-cloud/firestore';
import { activeEntries, extendEntry } from '../../domain/leases/capacity.js';
import { type Lease, type LeaseSettings, renewedExpiry, resolvableUntil } from '../../domain/leases/model.js';
import type { Clock } from '../../ports/clock.js';
import { LeaseStoreError, type RenewOutcome } from '../../ports/lease-store.js';
import { TTL_FIELD } from './lease-collections.js';
import { type LocatedLease, leaseRef, RENEWAL_IDS_FIELD } from './lease-document.js';
import type { Budget, DocumentWrite, LeaseStateAccess } from './lease-state-access.js';
import type { LeaseStateCache, StateBase } from './lease-state-cache.js';
import type { WriteTurn } from './lease-write-turn.js';

/** What renewLease uses of the store. */
export interface RenewalDeps {
  db: Firestore;
  clock: Clock;
  settings: LeaseSettings;
  state: Pick<LeaseStateCache, 'get'>;
  access: Pick<LeaseStateAccess, 'read' | 'refund' | 'commit'>;
  locate: (leaseId: string) => Promise<LocatedLease | null>;
  find: (leaseId: string) => Promise<Lease | null>;
  writing: WriteTurn;
}

/**
 * Renewals of one lease, on this replica or others, are counted each and its TTL is the last one's: the
 * lease document is updated only while it is still the version read (a renewal that lost its race reads
 * it again, with the state), and `renewals` is computed from that version. Read before the proxy's lock,
 * it was written from the read whatever landed meanwhile: two renewals at once stored one.
 */
export async function renewLease(
  deps: RenewalDeps,
  leaseId: string,
  ttlSeconds?: number,
  renewable?: (lease: Lease) => boolean,
): Promise<RenewOutcome> {
  const found = await deps.locate(leaseId);
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
    const ended = current.expiresAt.getTime() <= deps.clock.now().getTime();
    return ended ? { kind: 'expired', lease: current } : { kind: 'withdrawn', lease: current };
  };
  const refusedBefore = refused(lease);
  if (refusedBefore) return refusedBefore;
  const { proxy } = lease;
  const budget: Budget = { commits: 0 };
  // Written with the renewal, beside the last few renewals' ids: a commit whose answer was lost is known
  // as this request's by it, even once other renewals have landed on top of it.
  const renewalId = randomBytes(8).toString('hex');
  return deps.writing(proxy, async () => {
    let base: StateBase | undefined = deps.state.get(proxy);
    let fresh = !base;
    /** Whether a commit of this renewal was lost (it may have landed: the client resends, or gives up). */
    let lost = false;
    /** Whether the last loss was taken for one to the lease alone (the state not read again). */
    let guessed = false;
    for (;;) {
      if (lost) {
        // The lease document is read again: another renewal (or a report) may have written it since, and
        // the update is preconditioned on it. Listing this request's id, it holds this renewal's own write
        // — the client resent a commit that had landed and the resend failed its own precondition, or the
        // commit landed and its answer was lost — maybe with other renewals landed since: only the last
        // one's id, and this renewal counted again on top of them. Released since, it is answered as such
        // (whether or not this renewal landed before), not with a lease that has ended.
        const again = await deps.locate(leaseId);
        if (!again?.lease) return { kind: 'unknown' };
        if (again.lease.releasedAt) return { kind: 'released', lease: again.lease };
        if (again.renewalIds.includes(renewalId)) return { kind: 'renewed', lease: again.lease };
        // Lost to the lease document alone (read before this request's turn), the state is not read
        // again, and the commit is given back: no contention, and no backoff before the next one. Never
        // twice in a row: a commit lost after such a guess reads the state whatever the lease shows — a
        // stale state with reports landing on the lease between commits was otherwise committed against
        // until the budget ran out (a 503 for a renewal).
        const cached = deps.state.get(proxy);
        const leaseAlone: boolean =
          !guessed &&
          budget.lastLoss === 'conflict' &&
          cached !== undefined &&
          lostToLeaseAlone(version, lease, again.version, again.lease, cached);
        guessed = leaseAlone;
        if (leaseAlone) deps.access.refund(budget);
        base = leaseAlone ? cached : base;
        fresh = !leaseAlone;
        ({ lease, version, renewalIds } = again);
        lost = false;
      }
      if (!base || fresh) base = await deps.access.read(proxy);
      const now = deps.clock.now();
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
        const latest = (await deps.find(leaseId)) ?? lease;
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
        [TTL_FIELD]: Timestamp.fromDate(resolvableUntil(renewed, deps.settings)),
      };
      const read = version;
      const update: DocumentWrite = {
        ref: leaseRef(deps.db, leaseId),
        write: (b, ref) => b.update(ref, changes, { lastUpdateTime: read }),
      };
      if (await deps.access.commit(proxy, base, entries, now, budget, [update])) {
        return { kind: 'renewed', lease: renewed };
      }
      lost = true;
    }
  });
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

/**
 * Renewal ids a lease keeps: a renewal whose commit landed unanswered knows it as its own as long as fewer
 * than this many others of the lease landed before it reads the lease again (a read later).
 */
const RECENT_RENEWAL_IDS = 8;

/** The last renewal's id alone, as renewals wrote it before they kept several: removed by the next one. */
const LEGACY_RENEWAL_ID_FIELD = 'renewalId';
