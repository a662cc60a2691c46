// A plain in-memory ProxyStore for the API's unit tests until the reconcile side's InMemoryProxyStore (kept
// honest by the contract suite) is on main; then this file goes. Same semantics as the port: conditional
// writes on an opaque version, generation bumped only when the spec really changes.
import type { ProxyResource, ProxySpec, ProxyStatus } from '../domain/proxy.js';
import type { ConditionalWrite, ProxyFilter, ProxyStore, StoredProxy } from '../ports/proxy-store.js';
import { StoreError } from '../ports/proxy-store.js';

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

export class MemoryProxyStore implements ProxyStore {
  private readonly docs = new Map<string, { proxy: ProxyResource; version: number }>();
  private clock = 0;

  async get(name: string): Promise<StoredProxy | null> {
    const doc = this.docs.get(name);
    return doc ? { proxy: structuredClone(doc.proxy), version: String(doc.version) } : null;
  }

  async list(filter: ProxyFilter = {}): Promise<ProxyResource[]> {
    const wanted = Object.entries(filter.attributes ?? {});
    return [...this.docs.values()]
      .map((d) => structuredClone(d.proxy))
      .filter((p) => filter.phase === undefined || p.status.phase === filter.phase)
      .filter((p) =>
        wanted.every(([k, v]) => Object.hasOwn(p.spec.attributes, k) && p.spec.attributes[k] === v),
      )
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async create(proxy: ProxyResource): Promise<void> {
    if (this.docs.has(proxy.name)) throw new StoreError('already_exists', `proxy ${proxy.name} exists`);
    this.put(proxy);
  }

  async replaceSpec(name: string, spec: ProxySpec, expectedVersion: string): Promise<ConditionalWrite> {
    return this.conditional(name, expectedVersion, (p) =>
      canonical(p.spec) === canonical(spec) ? null : { ...p, spec, generation: p.generation + 1 },
    );
  }

  async requestDeletion(name: string, at: Date): Promise<ConditionalWrite> {
    const doc = this.docs.get(name);
    if (!doc) return 'gone';
    if (doc.proxy.deletionRequestedAt === null) this.put({ ...doc.proxy, deletionRequestedAt: new Date(at) });
    return 'written';
  }

  async writeStatus(name: string, status: ProxyStatus, expectedVersion: string): Promise<ConditionalWrite> {
    return this.conditional(name, expectedVersion, (p) => ({ ...p, status }));
  }

  async deleteDocument(name: string, expectedVersion: string): Promise<ConditionalWrite> {
    const doc = this.docs.get(name);
    if (!doc) return 'gone';
    if (String(doc.version) !== expectedVersion) return 'conflict';
    this.docs.delete(name);
    return 'written';
  }

  async listDue(until: Date, limit: number): Promise<Array<{ name: string; nextReconcileAt: Date }>> {
    return [...this.docs.values()]
      .flatMap(({ proxy: p }) => {
        const at = p.status.nextReconcileAt;
        return at && at.getTime() <= until.getTime() ? [{ name: p.name, nextReconcileAt: new Date(at) }] : [];
      })
      .sort((a, b) => a.nextReconcileAt.getTime() - b.nextReconcileAt.getTime())
      .slice(0, limit);
  }

  private conditional(
    name: string,
    expectedVersion: string,
    change: (p: ProxyResource) => ProxyResource | null,
  ): ConditionalWrite {
    const doc = this.docs.get(name);
    if (!doc) return 'gone';
    if (String(doc.version) !== expectedVersion) return 'conflict';
    const next = change(structuredClone(doc.proxy));
    if (next) this.put(next);
    return 'written';
  }

  private put(proxy: ProxyResource): void {
    this.docs.set(proxy.name, { proxy: structuredClone(proxy), version: ++this.clock });
  }
}
