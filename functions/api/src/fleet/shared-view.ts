// The fleet stream's one view for all its open streams (routes.ts): built and serialised once per build,
// and rebuilt no more often than its own cost allows. At 10,000 proxies a build and its JSON took some
// 200–600 ms of the event loop; rebuilt 250 ms after every lease write under steady lease traffic, the
// view kept the instance that serves the leases busy, and every acquire and release waited behind it.
import type { FleetView } from './view-model.js';

/**
 * The next build waits K times what the last one cost (counted from its end): the view takes at most
 * 1/(K+1) — a fifth — of the event loop, however large the fleet.
 */
export const BUILD_COST_FACTOR = 4;

export interface SerialisedView {
  /** The changes counted when it was built: fewer than counted now, and a later build is due. */
  changes: number;
  /** When its build ended, on the monotonic clock (ms). */
  atMs: number;
  /** What building and serialising it cost (ms). */
  costMs: number;
  /** The view as JSON without its generatedAt: a stream whose last event had this key has nothing to send. */
  key: string;
  /** The whole view as JSON: what JSON.stringify(view) gives, its content serialised once with the key. */
  data: string;
}

/** The view as JSON, and the same JSON without generatedAt (the key), from one serialisation. */
export function serialiseView(view: FleetView): { key: string; data: string } {
  const { generatedAt, ...content } = view;
  const key = JSON.stringify(content);
  return { key, data: `{"generatedAt":${JSON.stringify(generatedAt)},${key.slice(1)}` };
}

export class SharedFleetView {
  private changes = 0;
  private current: SerialisedView | null = null;

  constructor(
    private readonly build: () => FleetView,
    /** The least gap between two builds (the stream's debounce): a view is reused for this long at least. */
    private readonly minGapMs: number,
    private readonly monotonicNow: () => number,
  ) {}

  /** A document changed: the next get() after the gap builds anew. */
  changed(): void {
    this.changes++;
  }

  /** The least time from the end of the last build to the start of the next. */
  gapMs(): number {
    return Math.max(this.minGapMs, BUILD_COST_FACTOR * (this.current?.costMs ?? 0));
  }

  /**
   * The view: the last one while it is younger than the gap, else one built now. `dueInMs` is set when the
   * view returned misses changes: a later get() that far off builds them in (changes meanwhile coalesce).
   */
  get(): { view: SerialisedView; dueInMs: number | null } {
    const start = this.monotonicNow();
    const last = this.current;
    if (last && start - last.atMs < this.gapMs()) {
      const due = last.changes === this.changes ? null : Math.ceil(last.atMs + this.gapMs() - start);
      return { view: last, dueInMs: due };
    }
    const changes = this.changes;
    const { key, data } = serialiseView(this.build());
    const atMs = this.monotonicNow();
    // The same content keeps the same key string: each stream's comparison is then by reference.
    const sameKey = last !== null && last.key === key ? last.key : key;
    this.current = { changes, atMs, costMs: Math.max(0, atMs - start), key: sameKey, data };
    return { view: this.current, dueInMs: null };
  }

  /** No stream left: the next one must not start from this view (several MB, held for nothing). */
  drop(): void {
    this.current = null;
  }
}
