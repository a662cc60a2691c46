// The lease operations behind the HTTP routes (seed §7), free of HTTP: select → grant → build the
// response; renew; release; report → cooldown. Time comes from the Clock; storage from the ports.
import { createHash, randomFillSync } from 'node:crypto';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { cooldownFor, cooldownWriteDue } from '../../../../shared/src/domain/leases/cooldown.js';
import {
  endpointKey,
  listensElsewhere,
  type ProxyEndpoint,
  proxyEndpoint,
  proxyUrl,
} from '../../../../shared/src/domain/leases/endpoint.js';
import {
  canonicalAcquire,
  IDEMPOTENCY_WINDOW_MS,
  idempotencyScope,
  replayOf,
} from '../../../../shared/src/domain/leases/idempotency.js';
import { renewsOn, reportCoolsDown } from '../../../../shared/src/domain/leases/instance.js';
import {
  type Cooldown,
  isActive,
  isLeaseId,
  type Lease,
  type LeaseSettings,
  resolvableUntil,
} from '../../../../shared/src/domain/leases/model.js';
import {
  isLeasable,
  planSelection,
  type SelectionPlan,
} from '../../../../shared/src/domain/leases/selection.js';
import type {
  AcquireRequest,
  LeaseGrant,
  NoMatch,
  ReportRequest,
} from '../../../../shared/src/domain/leases/wire.js';
import {
  isCordoned,
  type ProxyProtocol,
  type ProxyResource,
  proxyProtocol,
  type SecretRef,
} from '../../../../shared/src/domain/proxy.js';
import { clientCredentialsRef } from '../../../../shared/src/domain/served-credentials.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import {
  type KeyIntent,
  type LeaseStore,
  LeaseStoreError,
  type ProxyCatalog,
  type RenewOutcome,
} from '../../../../shared/src/ports/lease-store.js';
import type { SecretReader } from '../../../../shared/src/ports/secrets.js';
import type { OwnershipGate } from '../../../../shared/src/ports/workers-ownership.js';
import { CredentialsUnavailable, credentialsFor } from './credentials.js';

export interface LeaseServiceDeps {
  catalog: ProxyCatalog;
  store: LeaseStore;
  secrets: SecretReader;
  /** Which proxies the gateway holds (contract §4 step 4): never leased while it does. */
  gate: OwnershipGate;
  clock: Clock;
  /**
   * Milliseconds on a monotonic clock (performance.now() in production), for the credentials quarantine's
   * QUARANTINE_MS: timed on `clock`, a wall clock stepped back an hour kept a secret's proxies out for an
   * hour and 30 s, every acquire on them 409 no_match meanwhile.
   */
  monotonicNow: () => number;
  settings: LeaseSettings;
  log: Logger;
  /** How long a request waits for the local views to load after a (re)start. */
  readyTimeoutMs?: number;
  /** Candidates a first plan ranks (CANDIDATE_LIMIT); tests set it low to reach the plan of them all. */
  candidateLimit?: number;
}

/**
 * The best proxies with room a first plan ranks and builds (selection.ts `limit`): a grant takes the first
 * nearly always, and at 10,000 proxies ranking them all cost every acquire milliseconds of the event loop.
 * When none of them could be granted (this replica's view behind other replicas' grants), the acquire
 * plans again with all of them.
 */
export const CANDIDATE_LIMIT = 64;

export type AcquireOutcome =
  /** `replayed`: the lease an earlier request with the same Idempotency-Key was granted. */
  | { kind: 'granted'; grant: LeaseGrant; replayed?: boolean }
  /** retryAfterSeconds: to the soonest end of the cooldowns counted (Retry-After), when any is. */
  | { kind: 'no_match'; body: NoMatch; retryAfterSeconds?: number }
  | { kind: 'credentials_unavailable' }
  /** The Idempotency-Key came with another request within its window: nothing acquired. */
  | { kind: 'key_reused' }
  /**
   * The Idempotency-Key's lease has ended (released or expired) within the key's window — or, `withdrawn`,
   * it may be held but cannot be handed out again: its proxy was withdrawn after a replay answered with it.
   */
  | { kind: 'key_spent'; withdrawn?: boolean };

/**
 * `cooldown_capped`: accepted, but the cooldown it asked for was not started — its lease has started
 * cooldowns for COOLDOWN_SITES_PER_LEASE other sites already (answered as `accepted`: 204).
 */
export type ReportOutcome = 'accepted' | 'cooldown_capped' | 'unknown_lease';

/**
 * What the store answers a renewal, or `cordoned`: active, but its proxy was cordoned (spec.cordoned) — the
 * lease runs to its expiry and is not extended, so a cordon's drain ends within the leases' TTL.
 */
export type RenewResult = RenewOutcome | { kind: 'cordoned'; lease: Lease };

/** A proxy whose credentials could not be read sits out this long, with every proxy naming the same secret
 * (counted as unhealthy meanwhile). */
const QUARANTINE_MS = 30_000;
const CREDENTIAL_ROUNDS = 3;
/** Grants given back because their proxy was withdrawn meanwhile, before the acquire answers from the view. */
const WITHDRAWN_ROUNDS = 3;
/** Times one request reads its Idempotency-Key record again after another request wrote it. */
const KEY_ROUNDS = 3;
/** Full proxies whose lease state one no-room acquire reads again (those this replica saw longest ago). */
export const FULL_REFRESH_LIMIT = 16;

export class LeaseService {
  /** Proxy names and secrets set aside → until when (monotonicNow); emptied once the last of them is over. */
  private readonly quarantine = new Map<string, number>();
  private quarantineEnds = 0;
  /** Once loaded, the lease and gateway views stay (their listeners reconnect by themselves). */
  private loaded = false;

  constructor(private readonly deps: LeaseServiceDeps) {}

  /** How many proxies and secrets are set aside now (their quarantine not yet seen to be over). */
  get setAsideCount(): number {
    return this.quarantine.size;
  }

  async ready(): Promise<void> {
    const t = this.deps.readyTimeoutMs ?? 15_000;
    try {
      // The catalog listens only while requests come (proxy-cache.ts): asked every time, at once when it is
      // already listening.
      if (this.loaded) return await this.deps.catalog.ready(t);
      // Without the gateway's view every pool proxy would look held: wait for it like for the others.
      await Promise.all([this.deps.catalog.ready(t), this.deps.store.ready(t), this.deps.gate.ready(t)]);
      this.loaded = true;
    } catch (err) {
      throw err instanceof LeaseStoreError
        ? err
        : new LeaseStoreError('not_ready', 'views not loaded', { cause: err });
    }
  }

  /**
   * With an Idempotency-Key (docs/leases.md § Idempotent acquire): the record of (holder, key) is read
   * first; within its window the same request answers with the lease it names while that lease is
   * active, and another request is refused. Else the grant writes the record in its own commit, so of two
   * deliveries at once one grants and the other finds the record and answers with that lease.
   */
  async acquire(req: AcquireRequest, holder: string, idempotencyKey?: string): Promise<AcquireOutcome> {
    const arrivedAt = this.deps.clock.now();
    await this.ready();
    if (idempotencyKey === undefined) {
      const outcome = await this.grantNew(req, holder, undefined);
      // Without a key there is no record another request could have written.
      if (outcome.kind === 'key_taken') throw new Error('key_taken without an idempotency key');
      return outcome;
    }
    const { store, clock } = this.deps;
    const recordId = sha256(idempotencyScope(holder, idempotencyKey));
    const requestHash = sha256(canonicalAcquire(req));
    for (let round = 0; round < KEY_ROUNDS; round++) {
      const stored = await store.findKey(recordId);
      const now = clock.now();
      const replay = replayOf(stored, requestHash, now);
      if (replay.kind === 'mismatch') return { kind: 'key_reused' };
      if (replay.kind === 'replay' && stored) {
        const lease = await store.find(replay.leaseId);
        if (!lease || !isActive(lease, now)) {
          // Or given back, with its record, by the delivery that granted it since the record was read:
          // that delivery grants again under the key, and so may this one.
          if ((await store.findKey(recordId))?.leaseId !== replay.leaseId) continue;
          return { kind: 'key_spent' };
        }
        let grant: LeaseGrant;
        try {
          grant = await this.grantBody(lease, req.protocols, 0, 'replay');
        } catch (err) {
          if (err instanceof GrantOutlived) {
            // It ended while its credentials were read: as above, an ended lease.
            if ((await store.findKey(recordId))?.leaseId !== replay.leaseId) continue;
            return { kind: 'key_spent' };
          }
          // Its pool proxy refused only by a view that is re-subscribing: not known to be withdrawn, so
          // neither given back nor the key spent — 503, as its renewal gets; the retry replays it.
          if (err instanceof GateUnknown) throw gateUnknownError(err.proxy);
          if (!(err instanceof ProxyWithdrawn) && !(err instanceof CredentialsUnavailable)) throw err;
          // The lease cannot be handed out now — what the request that made it would have found: give it
          // back with its record, and acquire under the key as that request would have gone on to do.
          // Not once a replay has answered with it: the crawler may hold it from that answer. Nor when the
          // grant may be newer than this delivery (a retry sent while this one stalled, answered before it
          // read the record): the crawler holds that answer, not this one's.
          if (err instanceof CredentialsUnavailable) this.setAside(err);
          if (stored.replayed || !grantedBefore(stored.grantedAt, arrivedAt)) {
            // Once a replay has answered with it, a withdrawn proxy leaves nothing to hand out under the
            // key — 503s would go on until the lease ends (or its proxy came back): the key is done with,
            // and the crawler holding the lease learns of its proxy when it renews. Not for a delivery
            // older than the grant: the one that made it may still give it back and grant again, and the
            // retry the 503 asks for replays that. Unreadable credentials may read again: 503 too.
            if (err instanceof ProxyWithdrawn && stored.replayed)
              return { kind: 'key_spent', withdrawn: true };
            throw answeredMeanwhile();
          }
          // Only while the record is still the one read: else (marked by a replay meanwhile, or given back
          // and granted again under the key) read it again.
          await store.release(lease.id, { dropKey: { recordId, version: stored.version } });
          continue;
        }
        // Marked before the answer leaves: from now on the crawler may hold the lease, and the delivery
        // that granted it (still answering on another replica) must not give it back.
        if (!(await store.markReplayed(recordId, stored.version))) continue;
        return { kind: 'granted', grant, replayed: true };
      }
      const key: KeyIntent = {
        recordId,
        requestHash,
        expiresAt: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
        replaces: stored?.version ?? null,
      };
      const outcome = await this.grantNew(req, holder, key);
      if (outcome.kind === 'key_taken') continue;
      // Nothing leased: a twin delivery of this key (a retry sent while this one ran) may have taken the
      // last slot between the read above and the look at the proxies — its lease, not no_match, is this
      // request's answer, or the crawler gives the key up and that lease is held by no one. One more read,
      // only on a keyed refusal.
      if (outcome.kind === 'no_match' || outcome.kind === 'credentials_unavailable') {
        const again = await store.findKey(recordId);
        if (replayOf(again, requestHash, clock.now()).kind !== 'fresh') continue;
      }
      return outcome;
    }
    throw new LeaseStoreError('contended', 'the idempotency key was written by other requests meanwhile');
  }

  private async grantNew(
    req: AcquireRequest,
    holder: string,
    firstKey: KeyIntent | undefined,
  ): Promise<AcquireOutcome | { kind: 'key_taken' }> {
    const { store } = this.deps;
    let key = firstKey;
    const target = req.target ?? null;
    let refreshed = false;
    // The first plans rank the best CANDIDATE_LIMIT; once those could not be granted, all of them.
    let ranksAll = false;
    let credentialFailures = 0;
    let withdrawals = 0;
    for (;;) {
      const plan = this.plan(req, target, ranksAll);
      let atCapacity = 0;
      let inGateway = 0;
      if (plan.candidates.length > 0) {
        const lease = {
          id: newLeaseId(),
          target,
          exclusive: req.exclusive,
          holder,
          ttlSeconds: req.ttlSeconds,
          ...(key && { key }),
        };
        let outcome: Awaited<ReturnType<typeof store.grant>>;
        try {
          outcome = await store.grant({
            candidates: plan.candidates,
            lease,
            claimSettled: (proxy, epoch, uid) => this.deps.gate.claimSettled(proxy, epoch, uid),
          });
        } catch (err) {
          // Candidates passed over unread (states this replica forgot rank as empty, and can fill a first
          // plan): the ones the plan left out may have room, as a grant walking every candidate would find.
          // Not commits lost race after race (also `contended`): a second round would only double them.
          if (!(plan.more > 0 && err instanceof LeaseStoreError && err.unread > 0)) throw err;
          ranksAll = true;
          continue;
        }
        if (outcome.kind === 'key_taken') return outcome;
        if (outcome.kind === 'granted') {
          // A grant given back takes its key record with it (the key is not spent by a lease nobody got);
          // the next grant of this request creates the record again. Not once a replay of the key has
          // answered with it (the crawler may hold that lease), nor once another delivery has given it back
          // and granted again under the key: false, and the request reads the record again, as a replay.
          const giveBack = async (): Promise<boolean> => {
            if (!key) return store.release(outcome.lease.id);
            const record = await store.findKey(key.recordId);
            if (record?.leaseId !== outcome.lease.id || record.replayed) return false;
            const drop = { recordId: key.recordId, version: record.version };
            if (!(await store.release(outcome.lease.id, { dropKey: drop }))) return false;
            key = { ...key, replaces: null };
            return true;
          };
          try {
            // At least half its TTL left as the answer leaves (GrantOutlived).
            const grant = await this.grantBody(
              outcome.lease,
              req.protocols,
              (req.ttlSeconds * 1000) / 2,
              'new',
            );
            return { kind: 'granted', grant };
          } catch (err) {
            if (err instanceof GrantOutlived) {
              // Secret Manager slow (the cached value answered at the read's deadline): nothing is wrong
              // with the proxy, and the next read may be quick (the cache refreshed) or as slow. Counted
              // as a credentials failure, not a withdrawal: three such reads are a 503
              // credentials_unavailable, not a lease-store refusal pointing at Firestore.
              this.deps.log.warn(
                'lease granted but its credentials read outlasted half its TTL: given back',
                { event: 'leases.grant_outlived', proxy: err.proxy, ttlSeconds: req.ttlSeconds },
              );
              if (!(await giveBack())) return { kind: 'key_taken' };
              if (++credentialFailures >= CREDENTIAL_ROUNDS) return { kind: 'credentials_unavailable' };
              continue;
            }
            if (err instanceof ProxyWithdrawn) {
              // Deleted, unhealthy, taken by the gateway, replaced, or cooling down for the target since it
              // was selected: the view the answer goes out with says it may not be leased. Give the slot back and select again (the
              // proxy is no candidate in that view); nothing is wrong with it that a quarantine would help.
              // So too when the gateway's view is only re-subscribing (GateUnknown): a 503 now would leave
              // a committed lease nobody was told of.
              if (!(await giveBack())) return { kind: 'key_taken' };
              if (++withdrawals >= WITHDRAWN_ROUNDS) return this.afterWithdrawals(req, target);
              continue;
            }
            if (!(err instanceof CredentialsUnavailable)) throw err;
            // Never hand out a proxy the crawler cannot authenticate to: give the slot back, set the
            // proxy aside for a while and select again.
            this.setAside(err);
            if (!(await giveBack())) return { kind: 'key_taken' };
            if (++credentialFailures >= CREDENTIAL_ROUNDS) return { kind: 'credentials_unavailable' };
            continue;
          }
        }
        atCapacity = outcome.atCapacity;
        inGateway = outcome.inGateway;
      }
      // None of the best could be granted (full or the gateway's as this replica now knows): the rest.
      if (plan.more > 0) {
        ranksAll = true;
        continue;
      }
      // "Full" may be this replica's old news: another replica may have released since. Look once, at a
      // bounded few (those seen longest ago; the next no-room request looks at the next few): a saturated
      // pool of 1,000 proxies retried every second would otherwise cost 1,000 reads a second a replica.
      if (!refreshed && plan.full.length > 0 && (await store.refresh(plan.full, FULL_REFRESH_LIMIT)) > 0) {
        refreshed = true;
        continue;
      }
      return noMatch(plan, atCapacity, inGateway, this.deps.clock.now());
    }
  }

  private setAside(err: CredentialsUnavailable): void {
    // Counted (leases.credentials_unreadable, an alert reads it): set aside, these proxies are counted
    // unhealthy, and a fleet on one secret the API can no longer read answers every acquire 409 no_match.
    this.deps.log.error('proxy credentials unreadable; proxy set aside', {
      event: 'leases.credentials_unreadable',
      proxy: err.proxy,
      secret: err.secret?.secret ?? null,
      cause: err.cause,
    });
    const now = this.deps.monotonicNow();
    const until = now + QUARANTINE_MS;
    // Keyed by names that come and go over months: those whose time is over go now, so the set holds only
    // what was set aside within the last QUARANTINE_MS.
    for (const [key, end] of this.quarantine) if (end <= now) this.quarantine.delete(key);
    this.quarantineEnds = Math.max(this.quarantineEnds, until);
    this.quarantine.set(err.proxy, until);
    // Every proxy naming that secret would fail the same way: set them aside in this one round, or
    // a few of them ranked first would use up the rounds while a proxy with good ones had room.
    if (err.secret) this.quarantine.set(secretKey(err.secret), until);
  }

  /**
   * The answer once WITHDRAWN_ROUNDS grants were given back: 409 when the view now leaves nothing to
   * lease; while a candidate is left, the request lost its races with the catalog (proxies deleted or
   * taken by the gateway one after another) and the crawler should retry — a 409 would say nothing could
   * be leased, with counts short of `considered` by the candidates left.
   */
  private afterWithdrawals(req: AcquireRequest, target: string | null): AcquireOutcome {
    const plan = this.plan(req, target);
    if (plan.candidates.length === 0) return noMatch(plan, 0, 0, this.deps.clock.now());
    throw new LeaseStoreError(
      'contended',
      `${WITHDRAWN_ROUNDS} proxies were withdrawn while their grants were made`,
    );
  }

  private plan(req: AcquireRequest, target: string | null, ranksAll = false): SelectionPlan {
    const { catalog, store, clock, gate } = this.deps;
    const now = clock.now();
    const quarantineNow = this.deps.monotonicNow();
    const limit = ranksAll ? undefined : (this.deps.candidateLimit ?? CANDIDATE_LIMIT);
    return planSelection(
      catalog.list(),
      { selector: req.selector, target, exclusive: req.exclusive, protocols: req.protocols, limit },
      {
        usage: (p) => store.usage(p, now),
        pending: (p) => store.pending(p),
        cooldownEndMs: (p, t) => store.cooldownEnd(p, t, now)?.getTime() ?? null,
        unusable: (p) => this.quarantined(p, quarantineNow),
        heldByGateway: (p) => !gate.leasable(p),
      },
    );
  }

  /** Set aside for unreadable credentials: the proxy itself, or the secret it names. */
  private quarantined(proxy: string, nowMs: number): boolean {
    if (this.quarantine.size === 0) return false;
    if (nowMs >= this.quarantineEnds) {
      this.quarantine.clear(); // every quarantine is over
      return false;
    }
    if ((this.quarantine.get(proxy) ?? 0) > nowMs) return true;
    const listed = this.deps.catalog.get(proxy);
    const ref = listed ? clientCredentialsRef(listed) : undefined;
    return ref !== undefined && (this.quarantine.get(secretKey(ref)) ?? 0) > nowMs;
  }

  /**
   * What the store answered; an ended lease past its report window is unknown, like a removed one. A
   * lease the store left as it is (`withdrawn`) because its proxy is cordoned is answered `cordoned`.
   */
  async renew(id: string, ttlSeconds: number | undefined): Promise<RenewResult> {
    if (!isLeaseId(id)) return { kind: 'unknown' };
    await this.ready();
    // Set by the store's call of `renewable` (a closure: declared wide, or TS keeps it `null`).
    let refusal = null as Refusal | null;
    const outcome = await this.deps.store.renew(id, ttlSeconds, (lease) => {
      refusal = this.renewable(lease);
      return refusal === null;
    });
    if (outcome.kind !== 'unknown' && outcome.kind !== 'renewed' && this.pastWindow(outcome.lease)) {
      return { kind: 'unknown' };
    }
    if (outcome.kind === 'withdrawn' && refusal === 'cordoned')
      return { kind: 'cordoned', lease: outcome.lease };
    return outcome;
  }

  /**
   * A lease is renewed only while its proxy could still be leased at all: not while the proxy is being
   * deleted (or is gone — also when another proxy has been created under its name since: the lease was
   * granted on the instance that was deleted), nor once it has joined the gateway pool (the planner
   * assigns a pool proxy only when its leases have ended, so a crawler renewing for ever would keep it out
   * of the pool). Health is not asked: a lease outlives a flap of its proxy's checks. Nor while it is
   * cordoned (spec.cordoned: `cordoned`, after the reasons above, which say more): the cordon's drain is
   * bounded by the leases' TTL.
   *
   * A pool proxy's answer comes from the gateway's view; while that view is re-subscribing it refuses every
   * pool proxy without knowing. A renewal then is not told `proxy_withdrawn` (acquire another: it would
   * give up a lease that may well be renewable) but 503 `not_ready`, to retry after Retry-After — unless
   * the lease has ended anyway (the store answers `expired`).
   */
  private renewable(lease: Lease): Refusal | null {
    const { catalog, gate, clock } = this.deps;
    const proxy = catalog.get(lease.proxy);
    if (
      !proxy ||
      !renewsOn(lease, proxy) ||
      proxy.deletionRequestedAt ||
      listensElsewhere(lease.endpoint, proxy)
    )
      return 'withdrawn';
    if (isCordoned(proxy)) return 'cordoned';
    if (!proxy.spec.gatewayPool || gate.leasable(proxy)) return null;
    if (!this.gateUnsure(proxy) || lease.expiresAt.getTime() <= clock.now().getTime()) return 'withdrawn';
    throw gateUnknownError(lease.proxy);
  }

  /**
   * Whether the gate's refusal of this proxy says only that its view is re-subscribing (a pool proxy fails
   * closed meanwhile: ownership-gate.ts) — not that the gateway holds it. Asked once the gate has refused.
   */
  private gateUnsure(proxy: ProxyResource): boolean {
    return proxy.spec.gatewayPool && !this.deps.gate.following();
  }

  async release(id: string): Promise<void> {
    if (isLeaseId(id)) await this.deps.store.release(id);
  }

  async report(id: string, report: ReportRequest): Promise<ReportOutcome> {
    if (!isLeaseId(id)) return 'unknown_lease';
    // Read once: the cooldown's write takes the lease as read here (its sites, its version).
    const read = await this.deps.store.findForReport(id);
    // An ended lease still resolves for CooldownWindow: a late report arrives exactly when the proxy is
    // being rate-limited (seed §7).
    if (!read || this.pastWindow(read.lease)) return 'unknown_lease';
    const { lease } = read;
    const now = this.deps.clock.now();
    const cooldown = cooldownFor(lease, report, this.deps.settings, now);
    if (cooldown && this.cooldownWriteDue(lease, cooldown, now) && (await this.coolsDown(lease))) {
      const started = await this.deps.store.startCooldown(cooldown, read);
      if (started === 'capped') return 'cooldown_capped';
      if (started === 'unknown_lease') return 'unknown_lease'; // its document deleted since it was read
    }
    return 'accepted';
  }

  /** A cooldown already running to about the same end is not written again (cooldown.ts cooldownWriteDue). */
  private cooldownWriteDue(lease: Lease, cooldown: Cooldown, now: Date): boolean {
    // A lease stored before uids were kept: its instance is not known to the view, written as before.
    if (lease.proxyUid === null) return true;
    const instance = { name: lease.proxy, uid: lease.proxyUid };
    const running = this.deps.store.cooldownEnd(instance, cooldown.target, now);
    return cooldownWriteDue(running, cooldown.until, this.deps.settings.cooldownWindowMs);
  }

  /**
   * A report on a lease whose proxy is gone — deleted, or deleted and created again under the same name —
   * is accepted but starts no cooldown: none can matter to it, and it would replace the new proxy's own
   * cooldown of the name and target. A cooldown carries the lease's proxyUid, so one reported before the
   * proxy was replaced does not cool down the new one (cooldown.ts isCoolingDown). Leases stored before
   * uids were recorded report as they always did (instance.ts reportCoolsDown).
   */
  private async coolsDown(lease: Lease): Promise<boolean> {
    if (lease.proxyUid === null) return true;
    await this.ready();
    return reportCoolsDown(lease, this.deps.catalog.get(lease.proxy));
  }

  private pastWindow(lease: Lease): boolean {
    return this.deps.clock.now().getTime() >= resolvableUntil(lease, this.deps.settings).getTime();
  }

  /**
   * The proxy as the catalog lists it now, if the lease may still be handed out on it: the same instance
   * (not one created again under its name), leasable (healthy, not being deleted, with an address) and
   * not held by the gateway, and speaking one of the request's protocols (an endpoint edited from http to
   * socks5 meanwhile would hand an HTTP-only crawler a URL it cannot use). Selection asked the same of an
   * older view; the grant's commit and the credentials read take time, during which the catalog follows
   * Firestore. A cordon is not asked about
   * here: it stops selection, and a grant committed is a lease like one made a moment before it, which
   * runs to its expiry (docs/leases.md § Cordon) — whether this answer or a replay of it goes out.
   * Nor listening at another address than the lease records (renewable asks the same, before the gate).
   * A `new` grant is also refused on a proxy cooling down for its target: a report of the site's push-back
   * (another crawler's lease on the proxy) may land while the grant waits its turn on the proxy — and every
   * acquire then queued on it was answered with it, sent to the site that had just refused it. A replay
   * answers with the lease the crawler may already hold, as a renewal would (a cooldown ends no lease).
   * Refused only by a gate whose view is re-subscribing: GateUnknown (a ProxyWithdrawn to a new grant).
   */
  private handedOut(lease: Lease, protocols: readonly ProxyProtocol[], grant: GrantKind): ProxyResource {
    const listed = this.deps.catalog.get(lease.proxy);
    if (
      !listed ||
      !renewsOn(lease, listed) ||
      !isLeasable(listed) ||
      listensElsewhere(lease.endpoint, listed) ||
      !protocols.includes(proxyProtocol(listed)) ||
      (grant === 'new' && this.deps.store.cooldownEnd(listed, lease.target, this.deps.clock.now()) !== null)
    )
      throw new ProxyWithdrawn(lease.proxy);
    // Asked last: every refusal the catalog alone decides is known, whatever the view's state.
    if (!this.deps.gate.leasable(listed))
      throw this.gateUnsure(listed) ? new GateUnknown(lease.proxy) : new ProxyWithdrawn(lease.proxy);
    return listed;
  }

  /**
   * The answer for a granted lease, read with its proxy's credentials. The lease's time runs from its
   * commit, and the read may take up to CREDENTIALS_READ_DEADLINE_MS (a Secret Manager that hangs, the
   * cached value then answered): a lease with `minLeftMs` or less left once it is done is GrantOutlived —
   * a 201 with a 5 s lease answered 5 s late was already expired, its slot free for another crawler.
   */
  private async grantBody(
    lease: Lease,
    protocols: readonly ProxyProtocol[],
    minLeftMs: number,
    grant: GrantKind,
  ): Promise<LeaseGrant> {
    const proxy = this.handedOut(lease, protocols, grant);
    const credentials = await credentialsFor(this.deps.secrets, proxy);
    if (lease.expiresAt.getTime() - this.deps.clock.now().getTime() <= minLeftMs)
      throw new GrantOutlived(lease.proxy);
    // Asked again after the read, the last wait before the answer: the proxy must still be leasable as the
    // answer leaves. The answer itself is built from the document the credentials were read for, so that
    // address and password belong together — and that address must still be the proxy's.
    const endpoint = proxyEndpoint(proxy);
    if (!endpoint || !sameEndpoint(endpoint, proxyEndpoint(this.handedOut(lease, protocols, grant))))
      throw new ProxyWithdrawn(lease.proxy); // isLeasable asked for one
    // The lease records where selection saw the proxy; an answer with another address would be refused
    // its first renewal (renewable: listensElsewhere).
    if (lease.endpoint !== null && endpointKey(endpoint) !== lease.endpoint)
      throw new ProxyWithdrawn(lease.proxy);
    return {
      leaseId: lease.id,
      proxy: {
        name: proxy.name,
        url: proxyUrl(endpoint, credentials),
        host: endpoint.host,
        port: endpoint.port,
        protocol: endpoint.protocol,
        attributes: proxy.spec.attributes,
        latencyMillis: proxy.status.latencyMillis,
      },
      expiresAt: lease.expiresAt.toISOString(),
      ttlSeconds: lease.ttlSeconds,
      target: lease.target,
      exclusive: lease.exclusive,
    };
  }
}

const sameEndpoint = (a: ProxyEndpoint, b: ProxyEndpoint | null): boolean =>
  b !== null && a.host === b.host && a.port === b.port && a.protocol === b.protocol;

/** Why a renewal is refused: the proxy may no longer be leased at all, or it is cordoned. */
type Refusal = 'withdrawn' | 'cordoned';

/** A lease answered as just granted, or as a replay under its Idempotency-Key (LeaseService.handedOut). */
type GrantKind = 'new' | 'replay';

/** The granted lease's proxy may no longer be handed out (LeaseService.handedOut): the grant is given back. */
class ProxyWithdrawn extends Error {
  constructor(readonly proxy: string) {
    super(`proxy ${proxy} was withdrawn while its lease was being granted`);
    this.name = 'ProxyWithdrawn';
  }
}

/**
 * The gate refused the lease's pool proxy only because its view is re-subscribing (handedOut): a new grant
 * gives it back like any withdrawn one (nobody was told of it); a replay answers 503 and keeps it.
 */
class GateUnknown extends ProxyWithdrawn {
  constructor(proxy: string) {
    super(proxy);
    this.name = 'GateUnknown';
  }
}

/** 503 to retry (not_ready): whether the pool proxy is still reclaimed and unowned is not known now. */
const gateUnknownError = (proxy: string) =>
  new LeaseStoreError(
    'not_ready',
    `the gateway ownership view is re-subscribing: whether ${proxy} is still reclaimed is not known`,
  );

/** The granted lease has too little of its time left once its answer is ready (grantBody). */
class GrantOutlived extends Error {
  constructor(readonly proxy: string) {
    super(`the lease on ${proxy} ran down while its credentials were read`);
    this.name = 'GrantOutlived';
  }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Whether a key's grant came before a delivery arrived, by more than the replicas' clocks may differ: only
 * then is its answer known to have been lost (the delivery is a retry of the one that made it).
 */
const grantedBefore = (grantedAt: Date, arrivedAt: Date): boolean =>
  grantedAt.getTime() < arrivedAt.getTime() - REPLICA_CLOCK_MARGIN_MS;
/** How far apart the API replicas' clocks may be (NTP-synchronised hosts: far less). */
const REPLICA_CLOCK_MARGIN_MS = 1_000;

/**
 * A lease is given back only while no other delivery of its Idempotency-Key may have answered with it:
 * once one may have (or has taken the key over), this delivery answers 503 to retry — the retry replays
 * what the crawler may already hold.
 */
const answeredMeanwhile = () =>
  new LeaseStoreError(
    'contended',
    'another delivery of the idempotency key answered with its lease meanwhile',
  );

/** The quarantine key of a secret (never a proxy name: those are DNS labels, without a slash). */
const secretKey = (ref: SecretRef) => `secret/${ref.secret}/${ref.version}`;

/** `moreAtCapacity` and `moreInGateway`: candidates the store found full, or claimed for a gateway worker. */
function noMatch(
  plan: SelectionPlan,
  moreAtCapacity: number,
  moreInGateway: number,
  now: Date,
): AcquireOutcome {
  const { considered, cordoned, inGateway, inCooldown, unhealthy, otherProtocol, cooldownEndsAtMs } = plan;
  return {
    kind: 'no_match',
    ...(cooldownEndsAtMs === null
      ? {}
      : { retryAfterSeconds: Math.max(1, Math.ceil((cooldownEndsAtMs - now.getTime()) / 1000)) }),
    body: {
      error: 'no_match',
      message: 'no proxy can be leased now' + otherProtocolHint(plan),
      considered,
      inGateway: inGateway + moreInGateway,
      atCapacity: plan.atCapacity + moreAtCapacity,
      inCooldown,
      ...(cooldownEndsAtMs === null ? {} : { cooldownEndsAt: new Date(cooldownEndsAtMs).toISOString() }),
      unhealthy,
      cordoned,
      otherProtocol,
    },
  };
}

/**
 * Proxies left out for their protocol are not `considered` (the counts keep their sum): the message is
 * where a crawler that forgot to ask for socks5 learns that its selector did match something.
 */
function otherProtocolHint({ otherProtocol }: SelectionPlan): string {
  if (otherProtocol === 0) return '';
  const n = otherProtocol === 1 ? '1 more proxy matches' : `${otherProtocol} more proxies match`;
  return `; ${n} the selector but speaks none of the requested protocols (see "protocols")`;
}

/**
 * 128 random bits: a lease id is a bearer capability for renew, report and release. Hex, so that it never
 * starts with "-" (a base64url id does one time in 64, and a command line then reads it as a flag).
 */
export function newLeaseId(): string {
  if (entropyOffset + LEASE_ID_BYTES > entropy.length) {
    randomFillSync(entropy);
    entropyOffset = 0;
  }
  const id = entropy.toString('hex', entropyOffset, entropyOffset + LEASE_ID_BYTES);
  entropyOffset += LEASE_ID_BYTES;
  return id;
}

// Random bytes drawn 4 KiB at a time (as crypto.randomUUID() does), not one system call per lease.
const LEASE_ID_BYTES = 16;
const entropy = Buffer.alloc(4096);
let entropyOffset = entropy.length;
