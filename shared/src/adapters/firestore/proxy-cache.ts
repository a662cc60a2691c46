// The ProxyCatalog discovery and leases read from: the `proxies` collection held in memory by a listener
// (seed §7: "Reader.List(Proxies) ── manager cache"), so a request costs no Firestore read. A document
// that does not decode is left out and logged, never allowed to break the listing.
import type { DocumentChange, Firestore, QueryDocumentSnapshot } from '@google-cloud/firestore';
import type { ProxyResource } from '../../domain/proxy.js';
import type { ProxyCatalog } from '../../ports/lease-store.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { Collections } from './collections.js';
import { type CollectionListener, listenCollection } from './lease-listener.js';
import { proxyFromFirestore } from './proxy-converter.js';

export class FirestoreProxyCatalog implements ProxyCatalog {
  private readonly proxies = new Map<string, ProxyResource>();
  private sorted: ProxyResource[] | null = [];
  private listener: CollectionListener | null = null;
  private readonly log: Logger;

  constructor(
    private readonly db: Firestore,
    opts: { log?: Logger } = {},
  ) {
    this.log = opts.log ?? jsonLogger({ component: 'proxy-catalog' });
  }

  start(): this {
    this.listener ??= listenCollection(
      this.db.collection(Collections.proxies),
      { reset: (docs) => this.reset(docs), apply: (changes) => this.apply(changes) },
      { name: Collections.proxies, log: this.log },
    );
    return this;
  }

  async ready(timeoutMs: number): Promise<void> {
    if (!this.listener) throw new Error('proxy catalog not started');
    await this.listener.ready(timeoutMs);
  }

  stop(): void {
    this.listener?.stop();
    this.listener = null;
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
      const proxy = proxyFromFirestore(doc.data());
      if (proxy.name !== doc.id) throw new Error(`name ${proxy.name} differs from the document id`);
      this.proxies.set(doc.id, proxy);
    } catch (err) {
      this.proxies.delete(doc.id);
      this.log.warn('proxy document does not decode; left out of discovery', { proxy: doc.id, error: err });
    }
  }
}
