// This replica's view of leaseState/{proxy}: entries plus the updateTime they were read or written at,
// which is the base of the next lastUpdateTime-guarded write. Fed by this replica's own commits (so its
// own writes are visible at once) and by reads (at start, on a lost race, and when a view is too old to
// answer "full" or to list); a version never goes backwards. Deliberately not a listener: every replica
// would then receive every lease change of the fleet (a read each, in production), and the emulator
// re-evaluates a listened collection on every write to it, halving lease throughput. A stale view can
// only cost a failed precondition and a re-read — never a grant beyond capacity.
import type { DocumentData, Timestamp } from '@google-cloud/firestore';
import { type Usage, usageOf } from '../../domain/leases/capacity.js';
import type { ProxyInstance } from '../../domain/leases/instance.js';
import type { LeaseEntry } from '../../domain/leases/model.js';
import type { Logger } from '../log/json-logger.js';
import { LEASE_STATE_RETENTION_MS } from './lease-collections.js';
import { decodeGatewayClaim, decodeState } from './lease-converter.js';

export interface StateBase {
  /** null: the stored document is not a valid lease state — the proxy is treated as full (fail closed). */
  entries: readonly LeaseEntry[] | null;
  /** updateTime of the document; null when it does not exist (the next write creates it). */
  version: Timestamp | null;
  /**
   * The epoch of the snapshot planner's claim on the proxy (lease-converter.ts `decodeGatewayClaim`);
   * null or absent when there is none.
   */
  gatewayClaim?: number | null;
}

interface Known extends StateBase {
  /** When this replica last learned the state: ms on the monotonic clock (StateClocks). */
  seenAt: number;
}

/**
 * The view's two clocks. How long ago a state was learned is an age taken in-process, so it is measured on
 * `monotonicNow` (production: performance.now): on the wall clock, one stepped back an hour made every age
 * negative, and for that hour no view was ever old enough to be read again (refresh, a grant's second
 * look) — other replicas' releases went unseen and proxies they freed stayed full here. `wallNow` (ms since
 * epoch) is what stored lease times (entries' expiresAt) are compared with.
 */
export interface StateClocks {
  monotonicNow: () => number;
  wallNow: () => number;
}

/** An unreadable state: full whatever the capacity (exclusive); `unreadable` says so to a listing. */
const FULL: Usage = { active: Number.MAX_SAFE_INTEGER, exclusive: true, unreadable: true };

/**
 * A state with no unexpired entry and no planner claim, not read or written for this long, is forgotten:
 * what it says (nothing leased) is what an unknown state says, and the next grant on the proxy reads it
 * again. Without it the view held every proxy name the replica ever read, listed or leased — deleted
 * proxies' and listed names without a document included — for the life of the instance.
 */
export const FORGET_IDLE_MS = 10 * 60_000;
/** How often (by the times states are put at) the view looks for states to forget. */
const FORGET_EVERY_MS = 60_000;

export class LeaseStateCache {
  private readonly states = new Map<string, Known>();
  private readonly owner = new Map<string, string>();
  private lastForget = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: Logger,
    private readonly clocks: StateClocks,
  ) {}

  get(proxy: string): StateBase | undefined {
    return this.states.get(proxy);
  }

  /**
   * How long ago this replica learned the proxy's state, on the monotonic clock (StateClocks: never on the
   * wall clock, which may step back); Infinity when it never did.
   */
  ageMs(proxy: string): number {
    const s = this.states.get(proxy);
    return s ? this.clocks.monotonicNow() - s.seenAt : Number.POSITIVE_INFINITY;
  }

  /** The proxy a known entry belongs to (a shortcut that saves reading the lease document). */
  proxyOf(leaseId: string): string | undefined {
    return this.owner.get(leaseId);
  }

  /** What counts against this proxy instance's capacity: not the entries of a deleted proxy of its name. */
  usage(proxy: ProxyInstance, now: Date): Usage {
    const s = this.states.get(proxy.name);
    if (!s) return { active: 0, exclusive: false };
    return s.entries ? usageOf(s.entries, proxy.uid, now) : FULL;
  }

  /**
   * Records a state as read or written at `seenAt` (monotonic ms, taken before the read). An older
   * version than the one known is ignored; the same version only refreshes `seenAt`. A read that found no
   * document replaces what is known (if a commit raced it, the next write's precondition fails and
   * re-reads).
   */
  put(proxy: string, next: StateBase, seenAt: number): void {
    const current = this.states.get(proxy);
    if (current?.version && next.version) {
      const order = compareVersions(next.version, current.version);
      if (order < 0) return;
      if (order === 0) {
        current.seenAt = Math.max(current.seenAt, seenAt);
        return;
      }
    }
    for (const e of current?.entries ?? []) this.owner.delete(e.leaseId);
    for (const e of next.entries ?? []) this.owner.set(e.leaseId, proxy);
    this.states.set(proxy, { ...next, seenAt });
    if (seenAt - this.lastForget >= FORGET_EVERY_MS) this.forgetIdle(seenAt);
  }

  /**
   * Drops the states that say nothing an unknown state does not (FORGET_IDLE_MS); `now` in monotonic ms,
   * an entry's expiry compared with the wall clock. A claimed
   * or unreadable one says more (held for the gateways; full) and is kept — until it has gone unseen as
   * long as a state's document outlives its last write (LEASE_STATE_RETENTION_MS): a deleted pool proxy's
   * claim is never cleared by a lease, and nothing reads its name again, so it stayed for the life of the
   * instance. By then its document is gone too, and a live proxy's is read again before any grant on it.
   */
  private forgetIdle(now: number): void {
    this.lastForget = now;
    const wallNow = this.clocks.wallNow();
    for (const [proxy, s] of this.states) {
      const idle = now - s.seenAt;
      if (idle < FORGET_IDLE_MS) continue;
      const saysMore = s.entries === null || (s.gatewayClaim ?? null) !== null;
      if (saysMore && idle < LEASE_STATE_RETENTION_MS) continue;
      if (s.entries?.some((e) => e.expiresAt.getTime() > wallNow)) continue;
      for (const e of s.entries ?? []) this.owner.delete(e.leaseId);
      this.states.delete(proxy);
    }
  }

  /** How many proxies' states the view holds (for tests and the view's own bound). */
  get size(): number {
    return this.states.size;
  }

  decode(doc: { id: string; data(): DocumentData | undefined; updateTime?: Timestamp }): StateBase {
    const data = doc.data();
    const entries = decodeState(data);
    if (!entries) this.log.error('malformed lease state: proxy treated as full', { proxy: doc.id });
    const gatewayClaim = decodeGatewayClaim(data);
    if (gatewayClaim === Number.POSITIVE_INFINITY)
      this.log.error('malformed gateway claim on a lease state: proxy held for the gateway', {
        proxy: doc.id,
      });
    return { entries, version: doc.updateTime ?? null, gatewayClaim };
  }
}

export function compareVersions(a: Timestamp, b: Timestamp): number {
  return a.seconds !== b.seconds ? a.seconds - b.seconds : a.nanoseconds - b.nanoseconds;
}
