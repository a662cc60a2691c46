// The proxy names a worker has business with, for filtering its outcome reports: those of its latest
// snapshot (read from Firestore once per version and kept while the version stands) and those being
// drained away from it. Bounded: one entry per worker.
import type { SnapshotStore } from '../../../../shared/src/ports/workers-snapshots.js';

export class SnapshotNames {
  private readonly cache = new Map<string, { version: number; names: ReadonlySet<string> }>();

  constructor(
    private readonly snapshots: Pick<SnapshotStore, 'header' | 'loadFull'>,
    private readonly maxWorkers = 1000,
  ) {}

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
      this.cache.delete(workerId);
      this.cache.set(workerId, hit);
      if (this.cache.size > this.maxWorkers) this.cache.delete(this.cache.keys().next().value!);
    }
    return new Set([...hit.names, ...Object.keys(header.draining)]);
  }
}
