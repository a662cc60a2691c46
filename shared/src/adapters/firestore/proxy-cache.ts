// The ProxyCatalog discovery and leases read from: the `proxies` collection held in memory by a listener
// (seed §7: "Reader.List(Proxies) ── manager cache"), so a request costs no Firestore read. A document
// that does not decode is left out and logged, never allowed to break the listing.
// The listener runs only while crawlers use this instance: the first discovery or lease request starts it
// and it stops `idleMs` after the last one. A listener costs a read per changed document per API instance,
// and it is not free for Firestore either: an instance that only serves admin writes (or the fleet page)
// should not turn every status write of the fleet into listener traffic.
import type { DocumentChange, Firestore, QueryDocumentSnapshot } from '@google-cloud/firestore';
import type { ProxyResource } from '../../domain/proxy.js';
import type { ProxyCatalog } from '../../ports/lease-store.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { outsideTrace } from '../log/trace-context.js';
import { Collections } from './collections.js';
import { type CollectionListener, listenCollection } from './lease-listener.js';
import { proxyFromFirestore } from './proxy-converter.js';

/** Ten minutes without a discovery or lease request: crawlers come in bursts shorter than that. */
export const CATALOG_IDLE_MS = 600_000;

/**
 * A proxies listener that has failed and not come back for this long fails the catalog's ready() (the
 * API answers 503 not_ready): past it, a deleted, unhealthy or pool-bound proxy could go on being handed
 * out from the last view for as long as the listener stays broken (a revoked permission). Shorter failures
 * are ridden out on the last view, as the listener's backoff re-subscribes. "Failed" is what the Firestore
 * client reports: it retries UNAVAILABLE, RESOURCE_EXHAUSTED (a listen quota) and the like itself, up to
 * 10 attempts (~2 minutes; ~10 under a quota, at its longest backoff) before it does, and a quiet
 * collection sends no snapshot to tell a live stream from a stuck one — so the view can be that much
 * older before this bound starts.
 */
export const CATALOG_STALE_LIMIT_MS = 60_000;

export class FirestoreProxyCatalog implements ProxyCatalog {
  private readonly proxies = new Map<string, ProxyResource>();
  private sorted: ProxyResource[] | null = [];
  private listener: CollectionListener | null = null;
  private readonly log: Logger;
  private readonly idleMs: number;
  private lastUsed = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private stopped = true;
  /** When the listener last broke without a full view since (monotonic ms); null while it follows. */
  private brokenSince: number | null = null;
  private readonly now: () => number;
  private readonly staleLimitMs: number;

  constructor(
    private readonly db: Firestore,
    opts: { log?: Logger; idleMs?: number; staleLimitMs?: number; now?: () => number } = {},
  ) {
    this.log = opts.log ?? jsonLogger({ component: 'proxy-catalog' });
    this.idleMs = opts.idleMs ?? CATALOG_IDLE_MS;
    this.staleLimitMs = opts.staleLimitMs ?? CATALOG_STALE_LIMIT_MS;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Allows the catalog to listen; the listener itself starts at the first `ready()`. */
  start(): this {
    this.stopped = false;
    return this;
  }

  /** Starts the listener when it is not running, and resolves once its first full view has loaded. */
  async ready(timeoutMs: number): Promise<void> {
    if (this.stopped) throw new Error('proxy catalog not started');
    this.lastUsed = performance.now();
    if (!this.listener) {
      this.listener = listenCollection(
        this.db.collection(Collections.proxies),
        { reset: (docs) => this.reset(docs), apply: (changes) => this.apply(changes) },
        {
          name: Collections.proxies,
          log: this.log,
          onError: () => {
            this.brokenSince ??= this.now();
          },
        },
      );
      // Outside the trace of the request that started it: the check reschedules itself for good.
      outsideTrace(() => this.scheduleIdleCheck(this.idleMs));
    }
    await this.listener.ready(timeoutMs);
    if (this.brokenSince !== null && this.now() - this.brokenSince >= this.staleLimitMs) {
      const seconds = Math.round((this.now() - this.brokenSince) / 1000);
      throw new Error(`the proxies listener has been failing for ${seconds} s: its view is stale`);
    }
  }

  /** Whether the listener runs right now (it starts on demand and stops when idle). */
  get listening(): boolean {
    return this.listener !== null;
  }

  stop(): void {
    this.stopped = true;
    this.unlisten();
  }

  private unlisten(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.listener?.stop();
    this.listener = null;
    this.brokenSince = null;
    this.proxies.clear();
    this.sorted = [];
  }

  private scheduleIdleCheck(delayMs: number): void {
    this.idleTimer = setTimeout(() => {
      const idle = performance.now() - this.lastUsed;
      if (idle >= this.idleMs) {
        this.log.info('no discovery or lease request for a while: the proxies listener stops', {
          idleSeconds: Math.round(idle / 1000),
        });
        this.unlisten();
      } else this.scheduleIdleCheck(this.idleMs - idle);
    }, delayMs);
    this.idleTimer.unref();
  }

  /** Sorted by name; rebuilt only after a change, so listing a large fleet stays cheap. */
  list(): readonly ProxyResource[] {
    this.sorted ??= [...this.proxies.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    return this.sorted;
  }

  get(name: string): ProxyResource | undefined {
    return this.proxies.get(name);
  }

  private reset(docs: readonly QueryDocumentSnapshot[]): void {
    this.brokenSince = null;
    this.proxies.clear();
    for (const doc of docs) this.upsert(doc);
    this.sorted = null;
  }

  private apply(changes: readonly DocumentChange[]): void {
    for (const change of changes) {
      if (change.type === 'removed') this.proxies.delete(change.doc.id);
      else this.upsert(change.doc);
    }
    this.sorted = null;
  }

  private upsert(doc: QueryDocumentSnapshot): void {
    try {
      const proxy = proxyFromFirestore(doc.data(), doc.id);
      this.proxies.set(doc.id, proxy);
    } catch (err) {
      this.proxies.delete(doc.id);
      this.log.warn('proxy document does not decode; left out of discovery', { proxy: doc.id, error: err });
    }
  }
}
