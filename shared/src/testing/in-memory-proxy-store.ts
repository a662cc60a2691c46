// The ProxyStore port in memory, for unit tests of handlers and the API. It is kept honest by the
// contract suite (proxy-store-contract.ts) that runs against it and the Firestore adapter alike.
import { uidKey, uidKeyPrefixes } from '../domain/instance-name.js';
import type { ProxyResource, ProxySpec, ProxyStatus } from '../domain/proxy.js';
import { canonicalJson } from '../domain/spec-hash.js';
import {
  type ConditionalWrite,
  type LiveUids,
  type ProxyFilter,
  type ProxyListing,
  type ProxyPage,
  type ProxyStore,
  type ProxyView,
  type ProxyWatcher,
  type StoredProxy,
  StoreError,
} from '../ports/proxy-store.js';

interface Entry {
  proxy: ProxyResource;
  version: number;
}

export class InMemoryProxyStore implements ProxyStore, ProxyWatcher {
  private readonly docs = new Map<string, Entry>();
  private clock = 0;
  /** Every document write (create, update, delete) so far: what the write-budget tests count. */
  writes = 0;

  async get(name: string): Promise<StoredProxy | null> {
    const e = this.docs.get(name);
    return e ? { proxy: structuredClone(e.proxy), version: String(e.version) } : null;
  }

  async list(filter: ProxyFilter = {}): Promise<ProxyResource[]> {
    return this.listNow(filter);
  }

  /** Follows the store without a listener's lag: each current() is the documents as they are then. */
  async watchAll(): Promise<ProxyView> {
    let stoppedAt: ProxyListing | null = null;
    const now = (): ProxyListing => ({ proxies: this.listNow({}), skipped: [] });
    return {
      current: () => stoppedAt ?? now(),
      failure: () => null,
      stop: () => {
        stoppedAt ??= now();
      },
    };
  }

  private listNow(filter: ProxyFilter): ProxyResource[] {
    return [...this.docs.values()]
      .map((e) => e.proxy)
      .filter((p) => !filter.phase || p.status.phase === filter.phase)
      .filter((p) => Object.entries(filter.attributes ?? {}).every(([k, v]) => p.spec.attributes[k] === v))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((p) => structuredClone(p));
  }

  /** Every document here fits the model (it holds ProxyResources): nothing is ever skipped. */
  async listAll(filter: ProxyFilter = {}): Promise<ProxyListing> {
    return { proxies: await this.list(filter), skipped: [] };
  }

  /** Reads only the page, and one more to say whether a next page exists (as the Firestore adapter). */
  async listPage(filter: ProxyFilter, page: { after: string | null; size: number }): Promise<ProxyPage> {
    const after = page.after;
    const read = (await this.list(filter))
      .filter((p) => after === null || p.name > after)
      .slice(0, page.size + 1);
    const proxies = read.slice(0, page.size);
    return { proxies, skipped: [], next: read.length > page.size ? proxies[proxies.length - 1]!.name : null };
  }

  async create(proxy: ProxyResource): Promise<void> {
    if (this.docs.has(proxy.name)) throw new StoreError('already_exists', `proxy ${proxy.name} exists`);
    this.put(proxy.name, structuredClone(proxy));
  }

  async replaceSpec(name: string, spec: ProxySpec, expectedVersion: string): Promise<ConditionalWrite> {
    return this.conditional(name, expectedVersion, (p) => {
      if (canonicalJson(p.spec) === canonicalJson(spec)) return null;
      return { ...p, spec: structuredClone(spec), generation: p.generation + 1 };
    });
  }

  async requestDeletion(name: string, at: Date, expectedVersion?: string): Promise<ConditionalWrite> {
    if (expectedVersion !== undefined) {
      return this.conditional(name, expectedVersion, (p) => ({ ...p, deletionRequestedAt: new Date(at) }));
    }
    const e = this.docs.get(name);
    if (!e) return 'gone';
    if (e.proxy.deletionRequestedAt) return 'written';
    this.put(name, { ...e.proxy, deletionRequestedAt: new Date(at) });
    return 'written';
  }

  async writeStatus(name: string, status: ProxyStatus, expectedVersion: string): Promise<ConditionalWrite> {
    return this.conditional(name, expectedVersion, (p) => ({ ...p, status: structuredClone(status) }));
  }

  async deleteDocument(name: string, expectedVersion: string): Promise<ConditionalWrite> {
    const e = this.docs.get(name);
    if (!e) return 'gone';
    if (String(e.version) !== expectedVersion) return 'conflict';
    this.docs.delete(name);
    this.writes++;
    return 'written';
  }

  async listDue(
    until: Date,
    limit: number,
    from?: Date,
  ): Promise<Array<{ name: string; nextReconcileAt: Date }>> {
    return [...this.docs.values()]
      .flatMap(({ proxy }) => {
        const at = proxy.status.nextReconcileAt;
        return at && at.getTime() <= until.getTime() && (!from || at.getTime() >= from.getTime())
          ? [{ name: proxy.name, nextReconcileAt: new Date(at) }]
          : [];
      })
      .sort((a, b) => a.nextReconcileAt.getTime() - b.nextReconcileAt.getTime())
      .slice(0, limit);
  }

  async liveUids(): Promise<LiveUids> {
    const proxies = [...this.docs.values()].map((e) => e.proxy);
    return {
      uids: new Set(proxies.map((p) => p.uid)),
      managed: new Set(proxies.filter((p) => p.spec.mode !== 'external').map((p) => p.uid)),
    };
  }

  async holdsUid(uid: string): Promise<boolean> {
    uidKeyPrefixes(uid); // the RangeError of a string that names no instance, as the Firestore store's
    const key = uidKey(uid);
    return [...this.docs.values()].some((e) => uidKey(e.proxy.uid) === key);
  }

  async recordsInstance(providerId: string): Promise<boolean> {
    return [...this.docs.values()].some((e) => e.proxy.status.providerId === providerId);
  }

  /** `change` returns the new document, or null for "nothing to write" (still reported as written). */
  private conditional(
    name: string,
    expectedVersion: string,
    change: (p: ProxyResource) => ProxyResource | null,
  ): ConditionalWrite {
    const e = this.docs.get(name);
    if (!e) return 'gone';
    if (String(e.version) !== expectedVersion) return 'conflict';
    const next = change(e.proxy);
    if (next) this.put(name, next);
    return 'written';
  }

  private put(name: string, proxy: ProxyResource): void {
    this.docs.set(name, { proxy, version: ++this.clock });
    this.writes++;
  }
}
