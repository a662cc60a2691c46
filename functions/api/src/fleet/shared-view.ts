// The fleet page's one view for all its open streams and the polls of GET /fleet/api/state (`fleet watch`,
// routes.ts): built and serialised once per build, and rebuilt no more often than its own cost allows. At
// 10,000 proxies a build and its JSON took some 200–600 ms of the event loop; rebuilt 250 ms after every
// lease write under steady lease traffic, the view kept the instance that serves the leases busy, and
// every acquire and release waited behind it.
import type { FleetView } from './view-model.js';

/**
 * The next build waits K times what the last one cost (counted from its end): the view takes at most
 * 1/(K+1) — a fifth — of the event loop, however large the fleet.
 */
export const BUILD_COST_FACTOR = 4;

/** The least time between two builds, and how long a change waits to be coalesced with the next ones. */
export const FLEET_DEBOUNCE_MS = 250;

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
  /** Streams counting the feed's changes (changed()): while none does, a held view may miss some. */
  private watchers = 0;
  private dropTimer: NodeJS.Timeout | null = null;

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

  /**
   * A stream now counts the feed's changes (it calls changed() on each); returns its release. The first one
   * counts one change at once: the view held was built by a poll while nobody counted (or by a stream gone
   * since), so it may miss changes, and the stream's get() says when the view that holds them is due. The
   * last one to leave drops the view: the next stream must not start from it (several MB, held for nothing).
   */
  watch(): () => void {
    if (this.watchers++ === 0) this.changed();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.watchers === 0) this.drop();
    };
  }

  /** The least time from the end of the last build to the start of the next. */
  gapMs(): number {
    return Math.max(this.minGapMs, BUILD_COST_FACTOR * (this.current?.costMs ?? 0));
  }

  /** Whether a view is held (a test's view of the memory kept). */
  get holding(): boolean {
    return this.current !== null;
  }

  /**
   * The view: the last one while it is younger than the gap, else one built now. `dueInMs` is set when the
   * view returned misses changes: a later get() that far off builds them in (changes meanwhile coalesce).
   * A view is never older than the gap when returned, so a poll (GET /fleet/api/state), which reads the
   * view and not `dueInMs`, never gets one older than that either, counted changes or not.
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
    if (this.watchers === 0) this.dropWhenStale();
    return { view: this.current, dueInMs: null };
  }

  /** Lets go of the view, and its timer. */
  drop(): void {
    this.current = null;
    if (this.dropTimer) clearTimeout(this.dropTimer);
    this.dropTimer = null;
  }

  /**
   * Polls alone (`fleet watch`, no stream open): the view is let go once older than the gap, when no get()
   * would return it any more, rather than held until the next stream ends.
   */
  private dropWhenStale(): void {
    if (this.dropTimer) clearTimeout(this.dropTimer);
    const view = this.current;
    if (!view) return;
    const due = view.atMs + this.gapMs() - this.monotonicNow();
    this.dropTimer = setTimeout(
      () => {
        this.dropTimer = null;
        if (this.current !== view || this.watchers > 0) return;
        // A timer may fire a little early on the monotonic clock: waits out the rest.
        if (this.monotonicNow() - view.atMs < this.gapMs()) this.dropWhenStale();
        else this.current = null;
      },
      Math.max(1, Math.ceil(due)),
    );
    this.dropTimer.unref?.();
  }
}
