// Wraps any ProxyStore — the in-memory fake or the Firestore adapter on the emulator — with what tests of
// its callers need: a count of write calls, a snapshot (every document with its version) to prove that
// nothing changed, and one-shot interceptors to inject a fault or a concurrent writer before a call.
import type { ProxyResource, ProxySpec, ProxyStatus } from '../domain/proxy.js';
import type {
  ConditionalWrite,
  LiveUids,
  ProxyFilter,
  ProxyListing,
  ProxyPage,
  ProxyStore,
  StoredProxy,
} from '../ports/proxy-store.js';

export type StoreOp = keyof ProxyStore;
export type WriteOp = 'create' | 'replaceSpec' | 'requestDeletion' | 'writeStatus' | 'deleteDocument';
type Interceptor = () => void | Promise<void>;

export class ObservedProxyStore implements ProxyStore {
  /** Every call of a writing method, in order, whatever its outcome. */
  readonly writeCalls: Array<{ op: WriteOp; name: string }> = [];
  private readonly interceptors = new Map<StoreOp, Interceptor[]>();

  constructor(readonly inner: ProxyStore) {}

  /** Runs `action` before the next call of `op`; a throw from it becomes that call's failure. */
  interceptNext(op: StoreOp, action: Interceptor): void {
    this.interceptors.set(op, [...(this.interceptors.get(op) ?? []), action]);
  }

  /** Every document and its version, by name (read through the inner store, not recorded). */
  async snapshot(): Promise<StoredProxy[]> {
    const all = await this.inner.list();
    const stored = await Promise.all(all.map((p) => this.inner.get(p.name)));
    return stored
      .filter((s): s is StoredProxy => s !== null)
      .sort((a, b) => (a.proxy.name < b.proxy.name ? -1 : 1));
  }

  async get(name: string): Promise<StoredProxy | null> {
    await this.intercept('get');
    return this.inner.get(name);
  }

  async list(filter?: ProxyFilter): Promise<ProxyResource[]> {
    await this.intercept('list');
    return this.inner.list(filter);
  }

  async listAll(filter?: ProxyFilter): Promise<ProxyListing> {
    await this.intercept('listAll');
    return this.inner.listAll(filter);
  }

  async listPage(filter: ProxyFilter, page: { after: string | null; size: number }): Promise<ProxyPage> {
    await this.intercept('listPage');
    return this.inner.listPage(filter, page);
  }

  async create(proxy: ProxyResource): Promise<void> {
    await this.write('create', proxy.name);
    return this.inner.create(proxy);
  }

  async replaceSpec(name: string, spec: ProxySpec, expectedVersion: string): Promise<ConditionalWrite> {
    await this.write('replaceSpec', name);
    return this.inner.replaceSpec(name, spec, expectedVersion);
  }

  async requestDeletion(name: string, at: Date, expectedVersion?: string): Promise<ConditionalWrite> {
    await this.write('requestDeletion', name);
    return this.inner.requestDeletion(name, at, expectedVersion);
  }

  async writeStatus(name: string, status: ProxyStatus, expectedVersion: string): Promise<ConditionalWrite> {
    await this.write('writeStatus', name);
    return this.inner.writeStatus(name, status, expectedVersion);
  }

  async deleteDocument(name: string, expectedVersion: string): Promise<ConditionalWrite> {
    await this.write('deleteDocument', name);
    return this.inner.deleteDocument(name, expectedVersion);
  }

  async listDue(
    until: Date,
    limit: number,
    from?: Date,
  ): Promise<Array<{ name: string; nextReconcileAt: Date }>> {
    await this.intercept('listDue');
    return this.inner.listDue(until, limit, from);
  }

  async liveUids(): Promise<LiveUids> {
    await this.intercept('liveUids');
    return this.inner.liveUids();
  }

  async holdsUid(uid: string): Promise<boolean> {
    await this.intercept('holdsUid');
    return this.inner.holdsUid(uid);
  }

  async recordsInstance(providerId: string): Promise<boolean> {
    await this.intercept('recordsInstance');
    return this.inner.recordsInstance(providerId);
  }

  private async write(op: WriteOp, name: string): Promise<void> {
    this.writeCalls.push({ op, name });
    await this.intercept(op);
  }

  private async intercept(op: StoreOp): Promise<void> {
    const action = this.interceptors.get(op)?.shift();
    if (action) await action();
  }
}
