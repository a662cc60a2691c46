// Group commit: independent writes that arrive while the store is busy share one Firestore commit.
// Each caller's writes keep their own preconditions, so a combined batch is exactly as safe as the
// separate ones — but it is all or nothing, so when one caller's precondition fails the batch, every
// caller in it is committed again on its own and learns its own answer. Under light load nothing waits:
// a write goes out at once while fewer than `maxInFlight` commits are outstanding; only past that do
// writes queue, and the next commit carries all of them. Measured on the emulator, five two-document
// writes in one commit cost about what one costs alone (bench/leases.ts). A caller that gives up (its
// deadline: Firestore stalled) takes its writes out of the queue: sent after its request had answered 503,
// a grant landed as a lease nobody holds, and a stall of minutes queued every request's writes meanwhile.

/** What a batch of writes must offer: Firestore's WriteBatch, or a fake in unit tests. */
export interface CommitBatch<T> {
  commit(): Promise<ReadonlyArray<{ writeTime: T }>>;
}

export interface GroupCommitOptions {
  /** Commits outstanding at once before writes start to queue (default 2: on the emulator 1–2 beat 4). */
  maxInFlight?: number;
  /** Callers per combined commit (default 50; Firestore allows 500 writes per commit). */
  maxCallers?: number;
  /**
   * Which failures of a combined commit may be one caller's doing (a failed precondition): those split the
   * commit so that each caller learns its own answer. Any other failure (Firestore overloaded or away) is
   * every caller's answer at once, so that they back off instead of retrying one by one at that moment.
   * Default: every failure splits.
   */
  splitOn?: (err: unknown) => boolean;
}

/** A caller's writes: adds them to the batch and says how many it added. */
export type Writes<B> = (batch: B) => number;

interface Pending<B, T> {
  keys: readonly string[];
  write: Writes<B>;
  /** Aborted once the caller gave up: its writes are never sent again (a split's re-send included). */
  signal?: AbortSignal;
  resolve: (results: ReadonlyArray<{ writeTime: T }>) => void;
  reject: (err: unknown) => void;
}

export class GroupCommitter<B extends CommitBatch<T>, T> {
  private readonly queue: Pending<B, T>[] = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxCallers: number;
  private readonly splitOn: (err: unknown) => boolean;
  /** Commits sent, how many carried more than one caller, and how many of those were split. */
  readonly counts = { commits: 0, combined: 0, splits: 0 };

  constructor(
    private readonly newBatch: () => B,
    opts: GroupCommitOptions = {},
  ) {
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 2);
    this.maxCallers = Math.max(1, opts.maxCallers ?? 50);
    this.splitOn = opts.splitOn ?? (() => true);
  }

  /**
   * Commits `write`'s writes, alone or with others'; resolves to the results of its own writes, in the
   * order it added them (each document's new version: a write that changed nothing keeps its old one).
   * `keys` names every document written: two callers writing one document never share a commit.
   */
  commit(
    keys: readonly string[],
    write: Writes<B>,
    /**
     * The caller gave up (its deadline): writes still queued are dropped, never sent, and the commit
     * rejects with the signal's reason. Writes already sent may still land (an answer lost, as any).
     */
    signal?: AbortSignal,
  ): Promise<ReadonlyArray<{ writeTime: T }>> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        const at = this.queue.indexOf(p);
        if (at < 0) return;
        this.queue.splice(at, 1);
        reject(signal!.reason);
      };
      const settled = () => signal?.removeEventListener('abort', onAbort);
      const p: Pending<B, T> = {
        keys,
        write,
        signal,
        resolve: (r) => {
          settled();
          resolve(r);
        },
        reject: (e) => {
          settled();
          reject(e);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(p);
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const group = this.takeGroup();
      this.inFlight++;
      this.send(group)
        .catch((err) => {
          for (const p of group) p.reject(err); // not reached: send() settles every caller itself
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  /** The longest prefix-first selection of queued callers with no document in common. */
  private takeGroup(): Pending<B, T>[] {
    const group: Pending<B, T>[] = [];
    const taken = new Set<string>();
    for (let i = 0; i < this.queue.length && group.length < this.maxCallers; ) {
      const p = this.queue[i]!;
      if (p.keys.some((k) => taken.has(k))) {
        i++;
        continue;
      }
      for (const k of p.keys) taken.add(k);
      group.push(p);
      this.queue.splice(i, 1);
    }
    return group;
  }

  private async send(group: Pending<B, T>[]): Promise<void> {
    this.counts.commits++;
    if (group.length === 1) return this.alone(group[0]!);
    this.counts.combined++;
    let results: ReadonlyArray<{ writeTime: T }>;
    const ranges: Array<[number, number]> = [];
    try {
      const batch = this.newBatch();
      let at = 0;
      for (const p of group) {
        const n = p.write(batch);
        ranges.push([at, at + n]);
        at += n;
      }
      results = await batch.commit();
    } catch (err) {
      if (!this.splitOn(err)) {
        for (const p of group) p.reject(err);
        return;
      }
      // Which caller failed it is unknowable: each commits again alone and gets its own answer.
      this.counts.splits++;
      await Promise.all(group.map((p) => this.alone(p)));
      return;
    }
    group.forEach((p, i) => {
      p.resolve(results.slice(...ranges[i]!));
    });
  }

  private async alone(p: Pending<B, T>): Promise<void> {
    // A split re-sends each caller of a combined commit that failed (it did not land: a batch is atomic);
    // one that gave up meanwhile has answered already, and its writes sent now would land unseen.
    if (p.signal?.aborted) {
      p.reject(p.signal.reason);
      return;
    }
    try {
      const batch = this.newBatch();
      p.write(batch);
      p.resolve(await batch.commit());
    } catch (err) {
      p.reject(err);
    }
  }
}
