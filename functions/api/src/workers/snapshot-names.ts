// The proxy names a worker has business with, for filtering its outcome reports: those of its latest
// snapshot (read from Firestore once per version and kept while the version stands) and those being
// drained away from it. Bounded: at most maxWorkers entries and, beyond the newest, maxNames names — every
// gateway start is a new worker id, and a long-lived API instance would otherwise hold the full name set of
// a thousand workers long gone (5 M names for a 5,000-proxy pool).
import type { SnapshotStore } from '../../../../shared/src/ports/workers-snapshots.js';

export class SnapshotNames {
  private readonly cache = new Map<string, { version: number; names: ReadonlySet<string> }>();

  private held = 0;

  constructor(
    private readonly snapshots: Pick<SnapshotStore, 'header' | 'loadFull'>,
    private readonly maxWorkers = 1000,
    private readonly maxNames = 50_000,
  ) {}

  /** How many names the cache holds, over every worker. */
  get heldNames(): number {
    return this.held;
  }

  /** A fresh set the caller may extend. */
  async relevant(workerId: string): Promise<Set<string>> {
    const header = await this.snapshots.header(workerId);
    if (!header) return new Set();
    let hit = this.cache.get(workerId);
    if (!hit || hit.version !== header.version) {
      const full = await this.snapshots.loadFull(workerId);
      hit = {
        version: full?.version ?? header.version,
        names: new Set(full?.proxies.map((p) => p.name) ?? []),
      };
      this.held -= this.cache.get(workerId)?.names.size ?? 0;
      this.cache.delete(workerId);
      this.cache.set(workerId, hit);
      this.held += hit.names.size;
      // The stalest go first; the one just read stays, however large (its own reports need it).
      while (this.cache.size > 1 && (this.cache.size > this.maxWorkers || this.held > this.maxNames)) {
        const stalest = this.cache.keys().next().value!;
        this.held -= this.cache.get(stalest)!.names.size;
        this.cache.delete(stalest);
      }
    } else {
      this.cache.delete(workerId); // used: the newest again (Map order is recency)
      this.cache.set(workerId, hit);
    }
    return new Set([...hit.names, ...Object.keys(header.draining)]);
  }
}
