// A Firestore listener that stays up: onSnapshot ends for good on its first error, so the listener is
// re-subscribed with capped, jittered backoff, and each re-subscription starts from a full snapshot
// (documents deleted meanwhile disappear from the view). The view keeps serving while it reconnects.
import type { DocumentChange, Query, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { Latch } from '../latch.js';
import type { Logger } from '../log/json-logger.js';
import { outsideTrace } from '../log/trace-context.js';

export interface ListenerSink {
  /** The complete current set: replaces the view (first snapshot after every (re)subscription). */
  reset(docs: readonly QueryDocumentSnapshot[]): void;
  apply(changes: readonly DocumentChange[]): void;
}

export interface CollectionListener {
  ready(timeoutMs: number): Promise<void>;
  stop(): void;
}

/**
 * `query` may be a function: it is called again at every (re)subscription, so a filter on the time (the
 * cooldowns still running) is taken from the clock of that subscription, not the first one's.
 */
export function listenCollection(
  query: Query | (() => Query),
  sink: ListenerSink,
  opts: {
    name: string;
    log: Logger;
    maxBackoffMs?: number;
    /** Told when the listener broke: the view is stale until the next reset() (views that must fail closed). */
    onError?: (err: unknown) => void;
    /**
     * Re-subscribe this often (a full snapshot, then reset()). For a query on the time: its filter is fixed
     * for the subscription's life, and the Firestore client holds every document that matched since
     * (its watch state) until the document is deleted; a new subscription lets it drop what has ended.
     */
    renewEveryMs?: number;
  },
): CollectionListener {
  let unsubscribe: (() => void) | null = null;
  let stopped = false;
  let failures = 0;
  let retry: NodeJS.Timeout | null = null;
  // Every request waits on it until the first snapshot, however long that takes (latch.ts).
  const loaded = new Latch();

  const subscribe = () => {
    let first = true;
    unsubscribe = (typeof query === 'function' ? query() : query).onSnapshot(
      (snap) => {
        failures = 0;
        if (first) {
          first = false;
          sink.reset(snap.docs);
          loaded.resolve();
        } else {
          sink.apply(snap.docChanges());
        }
      },
      (err) => {
        unsubscribe = null;
        if (stopped) return;
        opts.onError?.(err);
        const delay =
          Math.min(opts.maxBackoffMs ?? 30_000, 250 * 2 ** failures++) * (0.5 + Math.random() / 2);
        opts.log.error(`${opts.name} listener failed; re-subscribing`, {
          err: String(err),
          code: (err as { code?: unknown }).code,
          retryInMs: Math.round(delay),
        });
        retry = setTimeout(subscribe, delay);
      },
    );
  };
  // Started by whichever request first needed it, it serves every later one: its callbacks, retries and
  // renewals run outside that request's trace.
  outsideTrace(subscribe);
  // A failed subscription is skipped: its backoff re-subscribes afresh anyway.
  const renew =
    opts.renewEveryMs && opts.renewEveryMs > 0
      ? outsideTrace(() =>
          setInterval(() => {
            if (stopped || unsubscribe === null) return;
            unsubscribe();
            unsubscribe = null;
            subscribe();
          }, opts.renewEveryMs),
        )
      : null;
  renew?.unref();

  return {
    async ready(timeoutMs) {
      await loaded.within(
        timeoutMs,
        () => new Error(`${opts.name} listener not loaded after ${timeoutMs} ms`),
      );
    },
    stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      if (renew) clearInterval(renew);
      unsubscribe?.();
    },
  };
}
