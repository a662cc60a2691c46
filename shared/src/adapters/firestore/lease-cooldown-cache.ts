// The local view of cooldowns/*, kept by a listener plus this replica's own writes. Cooldowns steer
// selection (they are advisory, unlike capacity): another replica's report takes effect here within the
// listener delay, and a restarted replica loads the running ones before it serves. An expired cooldown is
// forgotten here at the next change the listener brings (a sweep at most once a minute), or at its hourly
// re-subscription (lease-store.ts COOLDOWN_LISTENER_RENEW_MS), not when TTL deletes its document up to a
// day later: the view holds what is running, not a day of history. No timer: the Firestore client's listener
// keeps the documents until that re-subscription all the same, and lookups compare `until` with the clock.
import type { DocumentChange, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { type CooldownMark, cooldownEnd, cooldownSite, isCoolingDown } from '../../domain/leases/cooldown.js';
import type { ProxyInstance } from '../../domain/leases/instance.js';
import type { Cooldown } from '../../domain/leases/model.js';
import type { Logger } from '../log/json-logger.js';
import { decodeCooldown } from './lease-converter.js';
import type { ListenerSink } from './lease-listener.js';
import type { StateClocks } from './lease-state-cache.js';

/** How often apply() sweeps expired cooldowns out of the view (at most). */
export const COOLDOWN_PRUNE_EVERY_MS = 60_000;

export class LeaseCooldownCache implements ListenerSink {
  /**
   * proxy → site (cooldownSite) → document id → its cooldown, as selection reads it. One site may be held
   * by two documents: one stored under its target with a port, before a cooldown was the site's
   * (lease-converter keeps the target as it was written), and one stored since.
   */
  private readonly index = new Map<string, Map<string, Map<string, CooldownMark>>>();
  /** document id → (proxy, site), to apply removals */
  private readonly keys = new Map<string, { proxy: string; site: string }>();

  /** When apply() last swept: monotonic ms. */
  private prunedAt = Number.NEGATIVE_INFINITY;

  /**
   * The sweeps' interval is an age taken in-process, on `clocks.monotonicNow`: on the wall clock, one
   * stepped back an hour left every sweep waiting for that hour, and ended cooldowns piled up in memory.
   * Whether a cooldown has ended is its stored `until` against `clocks.wallNow`.
   */
  constructor(
    private readonly log: Logger,
    private readonly clocks: StateClocks,
  ) {}

  /** How many cooldowns the view holds. */
  get size(): number {
    return this.keys.size;
  }

  /** Only a cooldown of this instance counts, not one of a deleted proxy of its name (instance.ts). */
  coolingDown(proxy: ProxyInstance, target: string | null, now: Date): boolean {
    return isCoolingDown(this.index, proxy, target, now);
  }

  cooldownEnd(proxy: ProxyInstance, target: string | null, now: Date): Date | null {
    return cooldownEnd(this.index, proxy, target, now);
  }

  put(docId: string, c: Pick<Cooldown, 'proxy' | 'proxyUid' | 'target' | 'until'>): void {
    const site = cooldownSite(c.target);
    this.keys.set(docId, { proxy: c.proxy, site });
    const bySite = this.index.get(c.proxy) ?? new Map<string, Map<string, CooldownMark>>();
    const held = bySite.get(site) ?? new Map<string, CooldownMark>();
    held.set(docId, { until: c.until, proxyUid: c.proxyUid });
    bySite.set(site, held);
    this.index.set(c.proxy, bySite);
  }

  reset(docs: readonly QueryDocumentSnapshot[]): void {
    this.index.clear();
    this.keys.clear();
    for (const doc of docs) this.upsert(doc);
  }

  apply(changes: readonly DocumentChange[]): void {
    for (const change of changes) {
      if (change.type === 'removed') this.remove(change.doc.id);
      else this.upsert(change.doc);
    }
    const t = this.clocks.monotonicNow();
    if (t - this.prunedAt >= COOLDOWN_PRUNE_EVERY_MS) {
      this.prunedAt = t;
      this.prune(this.clocks.wallNow());
    }
  }

  /**
   * Drops the cooldowns over at `t`, wall ms (their TTL delete, when it comes, then finds nothing to
   * remove).
   */
  private prune(t: number): void {
    for (const [docId, key] of this.keys) {
      const until = this.index.get(key.proxy)?.get(key.site)?.get(docId)?.until;
      if (until === undefined || until.getTime() <= t) this.remove(docId);
    }
  }

  private upsert(doc: QueryDocumentSnapshot): void {
    const c = decodeCooldown(doc.data());
    if (c) this.put(doc.id, c);
    else this.log.warn('malformed cooldown document ignored', { id: doc.id });
  }

  private remove(docId: string): void {
    const key = this.keys.get(docId);
    if (!key) return;
    this.keys.delete(docId);
    const bySite = this.index.get(key.proxy);
    const held = bySite?.get(key.site);
    held?.delete(docId);
    if (held?.size === 0) bySite?.delete(key.site);
    if (bySite?.size === 0) this.index.delete(key.proxy);
  }
}
