// The proxy names a worker has business with, for filtering its outcome reports: those of its latest
// snapshot (read from Firestore once per version and kept while the version stands) and those being
// drained away from it. Bounded: at most maxWorkers entries and, past maxNames names, none idle for idleMs
// — every gateway start is a new worker id, and a long-lived API instance would otherwise hold the full
// name set of a thousand workers long gone (5 M names for a 5,000-proxy pool). A worker that reported
// within idleMs stays whatever the names add up to: the live workers' snapshots together hold the pool
// (each proxy owned once, up to 20,000 a snapshot), and evicting one of them by count alone made every
// outcome call of a pool over maxNames a full snapshot read.
import type { SnapshotStore } from '../../../../shared/src/ports/workers-snapshots.js';

export interface SnapshotNamesOptions {
  maxWorkers?: number;
  /** Past this many names, the workers idle for idleMs go (stalest first). */
  maxNames?: number;
  idleMs?: number;
  now?: () => number;
}

export class SnapshotNames {
  private readonly cache = new Map<string, { version: number; names: ReadonlySet<string>; usedAt: number }>();

  private held = 0;
  private readonly maxWorkers: number;
  private readonly maxNames: number;
  private readonly idleMs: number;
  private readonly now: () => number;

  constructor(
    private readonly snapshots: Pick<SnapshotStore, 'header' | 'loadFull'>,
    opts: SnapshotNamesOptions = {},
  ) {
    this.maxWorkers = opts.maxWorkers ?? 1000;
    this.maxNames = opts.maxNames ?? 50_000;
    this.idleMs = opts.idleMs ?? 10 * 60_000;
    this.now = opts.now ?? Date.now;
  }

  /** How many names the cache holds, over every worker. */
  get heldNames(): number {
    return this.held;
  }

  /** A fresh set the caller may extend. */
  async relevant(workerId: string): Promise<Set<string>> {
    const header = await this.snapshots.header(workerId);
    if (!header) return new Set();
    let hit = this.cache.get(workerId);
    const now = this.now();
    if (!hit || hit.version !== header.version) {
      const full = await this.snapshots.loadFull(workerId);
      hit = {
        version: full?.version ?? header.version,
        names: new Set(full?.proxies.map((p) => p.name) ?? []),
        usedAt: now,
      };
      this.held -= this.cache.get(workerId)?.names.size ?? 0;
      this.cache.delete(workerId);
      this.cache.set(workerId, hit);
      this.held += hit.names.size;
      // The stalest go first (Map order is recency); the one just read stays, however large (its own
      // reports need it), and past maxNames only the idle go: the first entry not idle means none is.
      while (this.cache.size > 1) {
        const [stalest, entry] = this.cache.entries().next().value!;
        const over =
          this.cache.size > this.maxWorkers ||
          (this.held > this.maxNames && now - entry.usedAt >= this.idleMs);
        if (!over) break;
        this.held -= entry.names.size;
        this.cache.delete(stalest);
      }
    } else {
      this.cache.delete(workerId); // used: the newest again (Map order is recency)
      this.cache.set(workerId, { ...hit, usedAt: now });
    }
    return new Set([...hit.names, ...Object.keys(header.draining)]);
  }
}
