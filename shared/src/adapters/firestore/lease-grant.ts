// A lease's grant (LeaseStore.grant): the candidates tried in the order selection ranked them, each on
// its proxy's lock, its entry committed with the lease document (and the Idempotency-Key record) only on
// the state it was computed from; candidates a lost race showed behind a later one are tried last.
import type { Firestore } from '@google-cloud/firestore';
import { grantEntry, hasRoom, usageOf } from '../../domain/leases/capacity.js';
import {
  type Lease,
  type LeaseEntry,
  type LeaseSettings,
  resolvableUntil,
} from '../../domain/leases/model.js';
import { type Candidate, ranksBehind } from '../../domain/leases/selection.js';
import type { Clock } from '../../ports/clock.js';
import {
  type GrantOutcome,
  type GrantRequest,
  type KeyIntent,
  LeaseStoreError,
  type NewLease,
} from '../../ports/lease-store.js';
import { encodeLease } from './lease-converter.js';
import { leaseRef } from './lease-document.js';
import type { PendingCounter } from './lease-keyed-lock.js';
import { type LeaseKeys, sameVersion } from './lease-keys.js';
import type { Budget, DocumentWrite, LeaseStateAccess } from './lease-state-access.js';
import type { LeaseStateCache } from './lease-state-cache.js';
import { LockWaitError, type WriteTurn } from './lease-write-turn.js';

/** What grantLease uses of the store. */
export interface GrantDeps {
  db: Firestore;
  clock: Clock;
  settings: LeaseSettings;
  state: Pick<LeaseStateCache, 'get' | 'usage' | 'ageMs'>;
  access: Pick<LeaseStateAccess, 'read' | 'refund' | 'commit' | 'refresh'>;
  /** This replica's writes pending on each proxy (selection counts them). */
  inFlight: Pick<PendingCounter, 'get'>;
  keys: Pick<LeaseKeys, 'keyWrite' | 'findKey'>;
  find: (leaseId: string) => Promise<Lease | null>;
  writing: WriteTurn;
  /** Commits one request may attempt before answering "contended". */
  maxCommits: number;
  /** How old this replica's view of a proxy may be and still be trusted to say "full". */
  staleAfterMs: number;
  /** The request's wait for proxy locks, over all its candidates. */
  lockWaitMs: number;
}

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
export const FALLBACK_LOCK_WAIT_MS = 2_000;

export async function grantLease(
  deps: GrantDeps,
  { candidates, lease, claimSettled }: GrantRequest,
): Promise<GrantOutcome> {
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
  const lockDeadline = performance.now() + deps.lockWaitMs;
  let queued = 0;
  // Candidates passed over after a lost commit (grantOn 'passed'): ranked behind a later one on what the
  // re-read found, yet with room. Tried again, in turn, once no later one granted — never passed twice.
  const passed: Candidate[] = [];
  /** Candidates not tried because the budget left had to be kept for those passed over. */
  let untried = 0;
  const write = (candidate: Candidate, turn: GrantTurn) =>
    deps.writing(
      candidate.name,
      () => grantOn(deps, candidate, lease, budget, settled, key, turn),
      Math.max(0, lockDeadline - performance.now()),
    );
  for (const [i, candidate] of candidates.entries()) {
    if (!deps.state.get(candidate.name)) {
      if (unknownRead >= UNKNOWN_READ_LIMIT) {
        unread++;
        continue;
      }
      // The first is read alone, by grantOn: it usually has room. Once one had none, the view is behind
      // other replicas' grants, and the next ones are read together, in one call.
      unknownRead +=
        unknownRead === 0
          ? 1
          : await readUnknown(deps, candidates.slice(i), UNKNOWN_READ_LIMIT - unknownRead);
    }
    let granted: GrantOn;
    try {
      granted = await write(candidate, {
        behind: (active, now) =>
          ranksBehindLater(deps, candidate, active, candidates.slice(i + 1), lease, now),
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
      granted = await deps.writing(
        candidate.name,
        () => grantOn(deps, candidate, lease, budget, settled, key, { behind: null, reserve: 0 }),
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
      `writes to the lease state of ${queued} candidate(s) queued past ${deps.lockWaitMs} ms; none of the others leasable`,
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
function ranksBehindLater(
  deps: GrantDeps,
  candidate: Candidate,
  active: number,
  later: readonly Candidate[],
  lease: NewLease,
  now: Date,
): boolean {
  const next = later.find((c) => hasRoom(deps.state.usage(c, now), c.capacity, lease.exclusive));
  if (!next) return false;
  // This request's own write is among the candidate's pending ones: selection ranked it without it.
  const mine = active + deps.inFlight.get(candidate.name) - 1;
  return ranksBehind(
    candidate,
    mine,
    next,
    deps.state.usage(next, now).active + deps.inFlight.get(next.name),
  );
}

/** Reads, in one call, the states of the first `limit` of these candidates that the view does not hold. */
async function readUnknown(
  deps: GrantDeps,
  candidates: readonly Candidate[],
  limit: number,
): Promise<number> {
  const names = candidates
    .filter((c) => !deps.state.get(c.name))
    .slice(0, limit)
    .map((c) => c.name);
  await deps.access.refresh(names, deps.staleAfterMs);
  return names.length;
}

async function grantOn(
  deps: GrantDeps,
  candidate: Candidate,
  lease: NewLease,
  budget: Budget,
  claimSettled: (proxy: string, claimEpoch: number, uid?: string) => boolean,
  key: KeyIntent | undefined,
  turn: GrantTurn,
): Promise<GrantOn> {
  let base = deps.state.get(candidate.name);
  let fresh = false;
  let lostCommit = false;
  for (;;) {
    const before = base?.gatewayClaim ?? null;
    if (!base || fresh) base = await deps.access.read(candidate.name);
    // The clock is read after the base is known, so a grant is never stamped before the release or
    // expiry that made its room: stored leases alone prove the capacity invariant.
    const now = deps.clock.now();
    if (fresh && base.entries?.some((e) => e.leaseId === lease.id)) {
      // An earlier attempt committed although its answer was lost: the stored lease is the grant.
      return deps.find(lease.id);
    }
    // The snapshot planner assigned the proxy to a gateway worker after the lease service's view said
    // it was free (domain/workers/leasable.ts gatewayClaimSettled). A claim this replica does not know
    // of yet is found when the commit below fails its precondition and the state is read again.
    const claim = base.gatewayClaim ?? null;
    if (claim !== null && !claimSettled(candidate.name, claim, candidate.uid)) {
      // A commit that failed only because the planner claimed the proxy meanwhile was no capacity race:
      // it does not count against the request's budget (a pool flip of many proxies this replica knew
      // as free would otherwise use it up before a free candidate further down is tried).
      if (fresh && claim !== before) deps.access.refund(budget);
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
      if (lostCommit) deps.access.refund(budget);
      // Full as far as this replica knows; when that knowledge is old, another replica may have
      // released since: look once more before moving on.
      if (fresh || deps.state.ageMs(candidate.name) <= deps.staleAfterMs) return null;
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
      deps.access.refund(budget);
      if ((budget.refunds ?? 0) > refunds) return 'passed';
    }
    // Not while this candidate's last commit failed transiently: it may land after the read just made,
    // and then a commit of the lease on the candidates passed over fails on the lease document it created
    // until the budget runs out — a 503 while this proxy holds the lease. Committed again here (the
    // commit kept for them), at most one of the two lands, and a loss re-reads the state that shows which.
    const unsettled = lostCommit && budget.lastLoss === 'transient';
    if (turn.reserve > 0 && !unsettled && budget.commits + turn.reserve >= deps.maxCommits) return 'spent';
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
    const doc = encodeLease(record, resolvableUntil(record, deps.settings));
    const create: DocumentWrite = { ref: leaseRef(deps.db, lease.id), write: (b, ref) => b.create(ref, doc) };
    // A settled claim goes with this write: history, and it would otherwise outlive the lease.
    if (
      await deps.access.commit(
        candidate.name,
        base,
        entries,
        now,
        budget,
        key ? [create, deps.keys.keyWrite(lease.id, key, now)] : [create],
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
      const stored = await deps.keys.findKey(key.recordId);
      if (stored?.leaseId === lease.id) return deps.find(lease.id);
      if (!stored)
        key.replaces = null; // deleted meanwhile (its TTL): create it
      else if (!sameVersion(stored.version, key.replaces)) return 'key_taken';
    }
  }
}
