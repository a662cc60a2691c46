// The gateway worker's state: the one snapshot reference the hot path reads, live per-proxy counters
// that outlive swaps, staleness, revocations and the outcome queue (control-plane seed §2–5). Snapshots
// are validated, their credentials resolved and their routing compiled off the hot path, in slices with
// the event loop running between them (slices.ts); only then is the reference replaced, in a single
// assignment.

import {
  type AppliedVersion,
  decideSnapshotSlices,
  orderAgainst,
} from '../../../shared/src/domain/gateway/acceptance.js';
import { applyDeltaSlices } from '../../../shared/src/domain/gateway/delta.js';
import { nextDrainMark } from '../../../shared/src/domain/gateway/drain-bound.js';
import { isUsable, pickUpstream, StickyTable } from '../../../shared/src/domain/gateway/pick.js';
import {
  type CompiledRoute,
  carryCursors,
  type LiveCounters,
  matchRoute,
  newLiveCounters,
  type Upstream,
} from '../../../shared/src/domain/gateway/routing.js';
import {
  clockBehindMs,
  evaluateStaleness,
  grantEnded,
  grantLeftMs,
  initialStaleness,
  onShutdown,
  onSnapshotTaken,
  outlived,
  refusalCode,
  type SnapshotTake,
  type StalenessClock,
  type StalenessPhase,
  type StalenessState,
} from '../../../shared/src/domain/gateway/staleness.js';
import type {
  GatewayDelta,
  GatewaySnapshot,
  StickyKey,
} from '../../../shared/src/messages/gateway-snapshot.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { type CompiledSnapshot, compileSnapshotSlices, type UpstreamAuth } from './compile.js';
import type { CredentialCache } from './credentials.js';
import type { Logger } from './logger.js';
import { type Outcome, OutcomeQueue, type TakenOutcome } from './outcomes.js';
import type { PlainHttpSetting } from './plain-http.js';
import type { RuntimeView, SnapshotSink } from './session.js';
import { type Pause, runSliced } from './slices.js';

/** A proxy's hard expiry (expiresAt) on both clocks: the wall clock's instant, and the monotonic count. */
interface HardExpiry {
  readonly wallMs: number;
  readonly monoMs: number;
}

const NONE_EXPIRED: ReadonlySet<string> = new Set();

export type ApplyResult =
  | {
      ok: true;
      version: number;
      ownershipEpoch: number;
      checksum: string;
      duplicate: boolean;
      /** How many proxies the snapshot holds (what the start wait waits for: control/session.ts). */
      proxies: number;
    }
  | { ok: false; reason: string; needFullSnapshot: boolean };

export interface ProxyRuntimeCount {
  proxy: string;
  active: number;
  reserved: number;
  draining: boolean;
}

export interface WorkerOptions {
  credentials: CredentialCache;
  log: Logger;
  /** The wall clock: a snapshot's validUntil is a wall-clock instant. */
  now: () => number;
  /**
   * A monotonic clock (any origin; production: performance.now) for the stale age, for validUntil and each
   * expiresAt as they stood at the take, for the drain bound and for each outcome's age, so a wall-clock
   * step neither stretches nor cuts them (staleness.ts, drain-bound.ts, outcomes.ts). Required: defaulted
   * to `now`, a construction that left it out compiled and ran every one of them on the wall clock, and one
   * stepped back an hour held a snapshot fresh for that hour. Tests with one fake clock pass it as both
   * (test/support/gateway-clocks.ts).
   */
  monotonicNow: () => number;
  /** Number.POSITIVE_INFINITY: never stale by age (standalone, static file). */
  maxStaleAgeMs: number;
  /**
   * GATEWAY_PROXY_DRAIN_TIMEOUT_MS: how long a proxy drained away from this worker keeps what is open on
   * it before the listener's sweep cuts it (drain-bound.ts); 0 never cuts. Default 0 (tests).
   */
  proxyDrainTimeoutMs?: number;
  /** When set, snapshots addressed to another worker are refused. */
  workerId?: string;
  stickyTableSize: number;
  outcomeQueueSize: number;
  /** GATEWAY_PLAIN_HTTP (default `auto`: per upstream, from the snapshot). */
  plainHttp?: PlainHttpSetting;
  onOutcomeDropped?: () => void;
  /** Outcomes the reporter dropped unsent for their age (outcomesExpired): gateway_outcomes_expired_total. */
  onOutcomesExpired?: (n: number) => void;
  /** After each snapshot swap (off the hot path): the gateway forgets the request counts of routes gone. */
  onSwapped?: (snapshot: CompiledSnapshot) => void;
  /** Between two slices of taking a snapshot (slices.ts): default, a turn of the event loop. */
  pause?: Pause;
}

/**
 * Longer sticky values are kept in the table as their digest: a header value may be as long as a head
 * (GATEWAY_MAX_HEADER_BYTES), and one client sending new 16 KiB values would otherwise fill the table's
 * 100,000 entries with 1.6 GB of keys. Short ones (session ids, user names) stay as they are, costing no
 * hash on the hot path.
 */
export const STICKY_KEY_MAX_CHARS = 64;

export function stickyTableKey(value: string | undefined): string | undefined {
  if (value === undefined || value.length <= STICKY_KEY_MAX_CHARS) return value;
  // Prefixed so that a digest never equals a short value sent as it is.
  return `#${sha256Hex(value)}`;
}

/** Where a sticky route finds its key: a header of the request (per client user: headerStickyKey), or the client's user name. */
export interface StickySource {
  stickyValue(key: StickyKey): string | undefined;
  /** The client user the request's sticky key belongs to: its share of the sticky table. */
  stickyOwner(): string;
}

export type PickResult =
  | {
      kind: 'ok';
      route: CompiledRoute<UpstreamAuth>;
      upstream: Upstream<UpstreamAuth>;
      /**
       * The request has gone to a SUSPECT upstream as the fallback, counted once in suspectFallbacks: by
       * this pick, or by an earlier one of the same request (pick's `counted`). A redial passes it on.
       */
      fellBack: boolean;
    }
  | { kind: 'no_route' }
  | { kind: 'no_upstream'; route: CompiledRoute<UpstreamAuth> };

export class GatewayWorker implements SnapshotSink, RuntimeView {
  /** THE snapshot reference: read once per request, replaced whole by a swap. */
  private current: CompiledSnapshot | null = null;
  private readonly live = new Map<string, LiveCounters>();
  private staleness: StalenessState = initialStaleness;
  /** Cached acceptsTraffic(staleness), so the hot path reads a boolean. */
  accepting = false;
  /**
   * The ownership grant of the snapshot taken last has ended (staleness.ts grantEnded): nothing may use
   * its proxies any more, so the listener's sweep cuts what is still open on them (proxy-session.ts).
   * Recomputed by tick() and on every snapshot taken, like `accepting`.
   */
  grantOver = false;
  /**
   * The proxies past their own hard expiry (contract seed §3: each entry's expiresAt, which nothing
   * requires to be the snapshot's validUntil) while something may still be open on them: the listener's
   * sweep cuts it, as at grantOver. Recomputed by tick() and on every swap; replaced whole, and the same
   * empty set while none is, so the sweep reads its size and nothing else.
   */
  expiredProxies: ReadonlySet<string> = NONE_EXPIRED;
  /**
   * Each proxy's expiresAt as the latest snapshot listing it has it (a renewal moves it, either way), kept
   * while its counters live — so also for a proxy drained out of the snapshot with requests still open.
   */
  private readonly hardExpiry = new Map<string, HardExpiry>();
  /**
   * Requests admitted and waiting for the SSRF guard's look-up, not yet on an upstream: in flight, so a
   * drain waits for them too (they count nowhere else until pick reserves a slot).
   */
  checking = 0;
  /**
   * Requests that went to a SUSPECT upstream because none of the route's sound ones was usable (the
   * fail-open fallback): a plain count, read by gateway_suspect_fallbacks_total when /metrics is scraped.
   * Once per request, however often it picks (a redial picks again: pick's `counted`).
   */
  suspectFallbacks = 0;
  /** Outcomes taken off the queue and dropped unsent, too old to report (control/reporting.ts). */
  expiredOutcomes = 0;
  private readonly sticky: StickyTable;
  readonly outcomes: OutcomeQueue;
  private applying: Promise<unknown> = Promise.resolve();
  /** The controller's last revokeProxyIds: replaced whole by each answer (a new Set each time). */
  private revokedNames: ReadonlySet<string> = new Set();
  private maxStaleAgeMs: number;

  constructor(private readonly opts: WorkerOptions) {
    this.maxStaleAgeMs = opts.maxStaleAgeMs;
    this.sticky = new StickyTable(opts.stickyTableSize);
    this.outcomes = new OutcomeQueue(opts.outcomeQueueSize);
  }

  snapshot(): CompiledSnapshot | null {
    return this.current;
  }

  phase(): StalenessPhase {
    return this.staleness.phase;
  }

  /**
   * Why a request admitted earlier may not pick now (null: it may): once its look-up is back, and again to
   * redial after a refused dial (both listeners). Not accepting — stale, or no snapshot — refuses; a
   * shutdown drains what it admitted, but not onto a snapshot that has meanwhile outlived the stale age or
   * its grant.
   */
  refusalAfterLookup(): string | null {
    if (this.accepting) return null;
    const phase = this.staleness.phase;
    if (phase !== 'shutting_down') return refusalCode(phase) ?? 'not_accepting';
    const policy = { maxStaleAgeMs: this.maxStaleAgeMs };
    return outlived(this.staleness, this.clocks(), policy) ? 'snapshot_stale' : null;
  }

  /**
   * When the ownership grant of the snapshot taken last ends, as a `now()` instant: its validUntil, or
   * sooner where the monotonic count ends it first — a host clock behind the controller's, whose wall
   * clock would hold the grant that much late (staleness.ts grantLeftMs). /v1/fetch ends a fetch there at
   * the latest, as the proxy listener's sweep cuts a session at grantEnded. Infinity before any snapshot.
   */
  grantEndsAtMs(): number {
    const { validUntilMs, validUntilMonoMs } = this.staleness;
    if (validUntilMs === null || validUntilMonoMs === null) return Number.POSITIVE_INFINITY;
    const { wallMs, monoMs } = this.clocks();
    return Math.min(validUntilMs, wallMs + (validUntilMonoMs - monoMs));
  }

  appliedVersion(): AppliedVersion | null {
    const s = this.current;
    return s ? { version: s.version, ownershipEpoch: s.ownershipEpoch, checksum: s.checksum } : null;
  }

  /**
   * The controller's max stale age from registration. A bound configured locally
   * (GATEWAY_MAX_STALE_AGE_SECONDS) can only tighten it, never loosen it.
   */
  setMaxStaleAge(ms: number): void {
    this.maxStaleAgeMs = Math.min(ms, this.opts.maxStaleAgeMs);
    this.tick();
  }

  /** A full snapshot, already schema-validated by the source. Applies are serialised. */
  applySnapshot(snapshot: GatewaySnapshot): Promise<ApplyResult> {
    return this.serially(async () => {
      const revokedBefore = this.revokedNames;
      const decision = await runSliced(
        decideSnapshotSlices(this.appliedVersion(), snapshot, {
          workerId: this.opts.workerId,
          sha256: sha256Hex,
        }),
        this.opts.pause,
      );
      if (decision.action === 'reject')
        return { ok: false, reason: decision.reason, needFullSnapshot: false };
      if (decision.action === 'duplicate') return this.taken(snapshot, true);
      await this.swapIn(snapshot, revokedBefore);
      return this.taken(snapshot, false);
    });
  }

  /** A delta applies only on the exact base with a matching checksum; otherwise ask for a full snapshot. */
  applyDelta(delta: GatewayDelta): Promise<ApplyResult> {
    return this.serially(async () => {
      const base = this.current;
      if (!base) return { ok: false, reason: 'base_mismatch', needFullSnapshot: true };
      // Older than what runs (a Pub/Sub re-delivery), of an older epoch, or another content under the
      // version we run: dropped. No full snapshot would make it apply, so none is fetched.
      const order = orderAgainst(this.appliedVersion(), delta);
      if (order.action === 'reject') return { ok: false, reason: order.reason, needFullSnapshot: false };
      if (order.action === 'duplicate') return this.taken(base.source, true);
      const revokedBefore = this.revokedNames;
      const result = await runSliced(applyDeltaSlices(base.source, delta, sha256Hex), this.opts.pause);
      if (!result.ok) return { ok: false, reason: result.reject, needFullSnapshot: true };
      await this.swapIn(result.snapshot, revokedBefore);
      return this.taken(result.snapshot, false);
    });
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.applying.then(work, work);
    this.applying = next.catch(() => undefined);
    return next;
  }

  private taken(s: GatewaySnapshot, duplicate: boolean): ApplyResult {
    // A duplicate (a Pub/Sub re-delivery, the controller's resend of what was not ACKed, a GET of what
    // runs) obtains nothing new: the stale-age clock and the grant's anchor stay where the snapshot set
    // them (contract: no valid snapshot *obtained* for max_stale_age), and it is ACKed all the same.
    if (!duplicate) {
      const clocks = this.clocks();
      const validUntilMs = Date.parse(s.validUntil);
      const take = { ...clocks, validUntilMs, generatedAtMs: Date.parse(s.generatedAt) };
      this.staleness = onSnapshotTaken(this.staleness, take, { maxStaleAgeMs: this.maxStaleAgeMs });
      this.accepting = this.staleness.phase === 'fresh';
      this.updateGrant(clocks);
      this.takeHardExpiries(s, take);
      if (clocks.wallMs >= validUntilMs) this.expiredOnArrival(s, clocks.wallMs, validUntilMs);
      const behindMs = clockBehindMs(take);
      if (behindMs !== null) this.clockBehind(s, clocks.wallMs, behindMs);
    }
    return {
      ok: true,
      version: s.version,
      ownershipEpoch: s.ownershipEpoch,
      checksum: s.checksum,
      duplicate,
      proxies: s.proxies.length,
    };
  }

  /**
   * A snapshot whose grant had ended before it was taken serves nothing, yet it is ACKed and the reports
   * sit on it, so to the controller this worker looks live and idle. Once is a delivery held up; snapshot
   * after snapshot is this host's clock ahead of the controller's (or a backlog): said at ERROR each time.
   */
  private expiredOnArrival(s: GatewaySnapshot, wallMs: number, validUntilMs: number): void {
    this.opts.log.error('snapshot taken with its grant already over: nothing is served from it', {
      event: 'gateway.snapshot_expired_on_arrival',
      version: s.version,
      generatedAt: s.generatedAt,
      validUntil: s.validUntil,
      now: new Date(wallMs).toISOString(),
      lateBySeconds: Math.round((wallMs - validUntilMs) / 1000),
    });
  }

  /**
   * A snapshot generated ahead of this host's wall clock by more than the controller's skew allowance:
   * the clock runs behind. The grant ends in time all the same (staleness.ts grantLeftMs), but each
   * entry's usableUntil and expiresAt, read on the wall clock, end that much late — and nothing else
   * would show it (a clock ahead shows as snapshot_expired_on_arrival).
   */
  private clockBehind(s: GatewaySnapshot, wallMs: number, behindMs: number): void {
    this.opts.log.warn('snapshot generated ahead of the wall clock: this host runs behind the controller', {
      event: 'gateway.clock_behind',
      version: s.version,
      generatedAt: s.generatedAt,
      now: new Date(wallMs).toISOString(),
      behindBySeconds: Math.round(behindMs / 1000),
    });
  }

  private clocks(): StalenessClock {
    const wallMs = this.opts.now();
    return { wallMs, monoMs: this.opts.monotonicNow() };
  }

  /** `revokedBefore`: the revoked set as it stood when this take began. */
  private async swapIn(snapshot: GatewaySnapshot, revokedBefore: ReadonlySet<string>): Promise<void> {
    const refs = snapshot.proxies.flatMap((p) => (p.credentialsRef ? [p.credentialsRef] : []));
    const resolved = await this.opts.credentials.resolveAll(refs);
    // Counters first met here are kept aside until the swap: the tick, running between the slices,
    // forgets any counter of a proxy not in the current snapshot with nothing open (collectCounters).
    const met = new Map<string, LiveCounters>();
    const counters = (name: string): LiveCounters => {
      let c = this.live.get(name) ?? met.get(name);
      if (!c) {
        c = newLiveCounters();
        met.set(name, c);
      }
      return c;
    };
    const compiled = await runSliced(
      compileSnapshotSlices(snapshot, resolved, counters, { plainHttp: this.opts.plainHttp ?? 'auto' }),
      this.opts.pause,
    );
    // A revocation answered while this snapshot was being taken reached only the counters in `live`
    // then: those first met get it as revokeProxyIds would have set it. One answered before the take
    // began is older than the snapshot, which may give back a proxy it revoked (a cancelled drain): a
    // proxy the snapshot in use did not give, this one gives (back) unrevoked — whether its counters were
    // collected meanwhile (first met) or still live for what is open on it — and the next answer says
    // otherwise if need be. A proxy the snapshot in use gives too keeps what the last answer said — read
    // from that answer's set when the snapshot in use left it out for its credentials (no counters then).
    const revokedMeanwhile = this.revokedNames !== revokedBefore ? this.revokedNames : null;
    const givenBefore = this.givenBySnapshot();
    for (const u of compiled.upstreams.values()) {
      const firstMet = this.live.get(u.name) !== u.live;
      if (firstMet) this.live.set(u.name, u.live);
      if (!givenBefore(u.name)) u.live.revoked = revokedMeanwhile?.has(u.name) ?? false;
      // Given, but left out for its credentials: its counters went, and the last answer's word with them.
      else if (firstMet) u.live.revoked = this.revokedNames.has(u.name);
    }
    for (const skipped of compiled.skipped) {
      this.opts.log.warn('proxy left out of the snapshot: its credentials cannot be used', skipped);
    }
    // Read after the credentials' await, right before the swap: the picks made meanwhile count too.
    if (this.current) carryCursors(this.current.table, compiled.table);
    this.current = compiled;
    this.collectCounters();
    // A proxy back in the snapshot is no longer draining from this swap on, not from the next tick: the
    // sweep (every 250 ms) would cut what picks it meanwhile.
    this.updateDrains(this.clocks().monoMs);
    this.opts.onSwapped?.(compiled);
    this.opts.log.info('snapshot applied', {
      version: compiled.version,
      ownershipEpoch: compiled.ownershipEpoch,
      proxies: compiled.upstreams.size,
      suspect: compiled.suspectUpstreams,
      routes: compiled.table.routes.length,
    });
  }

  /** Counters of proxies no longer in the snapshot are dropped once they have drained. */
  private collectCounters(): void {
    const inSnapshot = this.current?.upstreams;
    for (const [name, c] of this.live) {
      if (!inSnapshot?.has(name) && c.active === 0 && c.reserved === 0) this.live.delete(name);
    }
  }

  /**
   * ReportRuntimeResponse.revoke_proxy_ids (seed §4): no new request picks these, at once. Each answer
   * carries the controller's whole current set of drains away from this worker, so a proxy not in it is
   * not revoked (any more): a drain the controller cancelled gives the proxy back, whatever the snapshot
   * said meanwhile — the snapshot stays the authority on what may be used.
   */
  revokeProxyIds(names: readonly string[]): void {
    const revoked = new Set(names);
    this.revokedNames = revoked;
    for (const [name, c] of this.live) c.revoked = revoked.has(name);
    this.updateDrains(this.clocks().monoMs);
  }

  /** Sparse runtime report: only proxies with a non-zero count or draining (seed §2). */
  runtimeCounts(): ProxyRuntimeCount[] {
    const given = this.givenBySnapshot();
    const out: ProxyRuntimeCount[] = [];
    for (const [proxy, c] of this.live) {
      const draining = c.revoked || !given(proxy);
      if (c.active > 0 || c.reserved > 0)
        out.push({ proxy, active: c.active, reserved: c.reserved, draining });
    }
    return out;
  }

  totals(): { active: number; reserved: number } {
    let active = 0;
    let reserved = 0;
    for (const c of this.live.values()) {
      active += c.active;
      reserved += c.reserved;
    }
    return { active, reserved };
  }

  /** Called on a timer: re-evaluates staleness and the drains, and forgets drained counters. */
  tick(): void {
    const clocks = this.clocks();
    this.staleness = evaluateStaleness(this.staleness, clocks, {
      maxStaleAgeMs: this.maxStaleAgeMs,
    });
    this.accepting = this.staleness.phase === 'fresh';
    this.updateGrant(clocks);
    this.collectCounters();
    this.updateDrains(clocks.monoMs);
    this.updateExpiry(clocks);
  }

  /**
   * Each entry's expiresAt from the snapshot just swapped in — one left out for its credentials too (still
   * this worker's: what it has open runs on) — anchored on the clocks the grant was (the same instants for
   * an expiresAt equal to validUntil, so the two end at the same tick). A renewed expiry gives the proxy
   * back from this swap on, not from the next tick (as for the drains). A proxy this snapshot no longer
   * lists has no expiry of its own any more: the controller keeps it this worker's until its counts reach
   * zero or the worker's grant lapses, so the grant (grantOver) and the drain bound
   * (GATEWAY_PROXY_DRAIN_TIMEOUT_MS) govern what is still open on it — its last listing's expiresAt, a grant
   * renewed minutes ago, would cut a drain at 90–180 s whatever the drain bound said.
   */
  private takeHardExpiries(s: GatewaySnapshot, take: SnapshotTake): void {
    const listed = new Set<string>();
    for (const p of s.proxies) {
      listed.add(p.name);
      const wallMs = Date.parse(p.expiresAt);
      const left = grantLeftMs({ ...take, validUntilMs: wallMs });
      this.hardExpiry.set(p.name, { wallMs, monoMs: take.monoMs + left });
    }
    for (const proxy of this.hardExpiry.keys()) if (!listed.has(proxy)) this.hardExpiry.delete(proxy);
    this.updateExpiry(take);
  }

  /**
   * Recomputes expiredProxies: each proxy with live counters whose hard expiry has passed on either clock
   * (the monotonic one counts at most what the entry had left at its take: grantLeftMs, as for the grant).
   * Logged once per proxy as it expires with anything open on it, unless the whole grant is over
   * (gateway.grant_ended says it once for all). Forgets the expiry of a proxy whose
   * counters are gone (nothing open, not in the snapshot): nothing of it is left to cut.
   */
  private updateExpiry(clocks: StalenessClock): void {
    let expired: Set<string> | null = null;
    for (const [proxy, end] of this.hardExpiry) {
      const c = this.live.get(proxy);
      if (!c) {
        this.hardExpiry.delete(proxy);
        continue;
      }
      if (clocks.wallMs < end.wallMs && clocks.monoMs < end.monoMs) continue;
      expired ??= new Set();
      expired.add(proxy);
      if (!this.expiredProxies.has(proxy) && !this.grantOver && c.active + c.reserved > 0) {
        this.opts.log.warn('proxy past its hard expiry: its sessions on the proxy listener are cut', {
          event: 'gateway.proxy_expired',
          proxy,
          expiresAt: new Date(end.wallMs).toISOString(),
          active: c.active,
          reserved: c.reserved,
        });
      }
    }
    this.expiredProxies = expired ?? NONE_EXPIRED;
  }

  /**
   * Whether the snapshot in use gives the proxy to this worker. A proxy left out at compile (its
   * credentials unreadable) is still this worker's by the snapshot: not drained, so nothing waits for its
   * counts, and what it has open carries on (no new request picks it) — nor reported draining, which put
   * it ahead of the proxies in use where a report is cut short (reporting.ts), one of those read as idle.
   */
  private givenBySnapshot(): (proxy: string) => boolean {
    const inSnapshot = this.current?.upstreams;
    const leftOut = new Set(this.current?.skipped.map((s) => s.proxy));
    return (proxy) => inSnapshot?.has(proxy) === true || leftOut.has(proxy);
  }

  /**
   * Times each proxy's drain away from this worker (revoked, or gone from the snapshot) and marks it cut
   * once it has outlived GATEWAY_PROXY_DRAIN_TIMEOUT_MS, logged once with what is cut (drain-bound.ts).
   */
  private updateDrains(monoMs: number): void {
    const given = this.givenBySnapshot();
    const bound = this.opts.proxyDrainTimeoutMs ?? 0;
    for (const [proxy, c] of this.live) {
      const next = nextDrainMark(c, c.revoked || !given(proxy), monoMs, bound);
      c.drainingSinceMs = next.drainingSinceMs;
      c.cut = next.cut;
      if (next.cutNow && c.active + c.reserved > 0) {
        this.opts.log.warn('proxy drain outlived its bound: its sessions on the proxy listener are cut', {
          event: 'gateway.drain_cut',
          proxy,
          active: c.active,
          reserved: c.reserved,
          drainTimeoutMs: bound,
        });
      }
    }
  }

  /**
   * Recomputes grantOver, and logs its turning true once while anything is open on the proxies — from
   * the tick, or from a snapshot taken with its grant already over (a delayed delivery, a skewed clock):
   * the listener's sweep cuts those sessions either way.
   */
  private updateGrant(clocks: StalenessClock): void {
    const wasOver = this.grantOver;
    this.grantOver = grantEnded(this.staleness, clocks);
    if (!this.grantOver || wasOver) return;
    const open = this.totals();
    if (open.active + open.reserved > 0) {
      this.opts.log.warn('ownership grant ended: what is still open on its proxies is cut', {
        event: 'gateway.grant_ended',
        validUntil: new Date(this.staleness.validUntilMs ?? 0).toISOString(),
        ...open,
      });
    }
  }

  beginShutdown(): void {
    this.staleness = onShutdown(this.staleness);
    this.accepting = false;
  }

  /**
   * Hot path: one read of the snapshot reference, then the route's policy. `avoid`: the upstream this
   * request just failed to dial, never picked again for it (pick.ts). `counted`: an earlier pick of this
   * request fell back already (its result's `fellBack`), so this one counts no fallback again — a request
   * counts once in suspectFallbacks, which the alert divides by requests (terraform/monitoring.tf).
   */
  pick(
    host: string,
    nowMs: number,
    sticky: StickySource,
    avoid?: Upstream<UpstreamAuth>,
    counted = false,
  ): PickResult {
    const snap = this.current;
    const route = snap ? matchRoute(snap.table, host) : undefined;
    if (!route) return { kind: 'no_route' };
    const key = route.stickyKey ? stickyTableKey(sticky.stickyValue(route.stickyKey)) : undefined;
    const upstream = pickUpstream(
      route,
      nowMs,
      key,
      this.sticky,
      avoid,
      key === undefined ? '' : sticky.stickyOwner(),
    );
    if (!upstream) return { kind: 'no_upstream', route };
    // One boolean read while nothing is suspect; the sound list is walked only for a suspect pick. A sound
    // proxy avoided (its dial just refused) is no candidate for this request: going past it is a fallback.
    const fellBack = counted || (upstream.suspect === true && !anyUsable(route.sound, nowMs, avoid));
    if (fellBack && !counted) this.suspectFallbacks++;
    return { kind: 'ok', route, upstream, fellBack };
  }

  /** Each with its age now on the monotonic clock: never from `at`, the wall clock's, which a step moves. */
  takeOutcomes(max: number): TakenOutcome[] {
    return this.outcomes.take(max, this.opts.monotonicNow());
  }

  outcomesExpired(n: number): void {
    this.expiredOutcomes += n;
    this.opts.onOutcomesExpired?.(n);
  }

  /** Per request (the hot path): queued with the monotonic time, one clock read and no allocation. */
  recordOutcome(o: Outcome): void {
    if (!this.outcomes.push(o, this.opts.monotonicNow())) this.opts.onOutcomeDropped?.();
  }

  stickyEntries(): number {
    return this.sticky.size;
  }
}

/**
 * Whether a suspect pick was the fallback: no sound candidate usable, the one avoided not being one. A
 * sticky key pinned to a proxy that turned SUSPECT stays on it while sound ones are usable (pick.ts): that
 * is no fallback, and not counted.
 */
function anyUsable(
  list: readonly Upstream<UpstreamAuth>[],
  nowMs: number,
  avoid: Upstream<UpstreamAuth> | undefined,
): boolean {
  for (let i = 0; i < list.length; i++) {
    const u = list[i]!;
    if ((avoid === undefined || u.name !== avoid.name) && isUsable(u, nowMs)) return true;
  }
  return false;
}
