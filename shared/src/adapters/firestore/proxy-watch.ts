// The `proxies` collection followed by a listener (ProxyWatcher): what the probe's loop reads before each
// pass. The first snapshot costs what a listing does (one read per document); after it, one read per
// document written, and only those documents are decoded again — a burst of status writes while the probe
// times its checks must not re-decode the whole fleet per snapshot on the event loop. The listing is built
// when asked for, at most once per change.
//
// Failures: the first snapshot is bounded (FIRST_SNAPSHOT_WITHIN_MS) — the client retries a failing
// listen itself for minutes before it reports an error, past the function's timeout, and a run that never
// started would never record its end. After the first, an error the client reports stops the view
// (failure()); until it does — ~2 minutes of its own retries — the view is as of the last snapshot.
import type { CollectionReference, DocumentSnapshot } from '@google-cloud/firestore';
import type { ProxyResource } from '../../domain/proxy.js';
import {
  InvalidStoredProxy,
  type ProxyListing,
  type ProxyView,
  type SkippedProxy,
  StoreError,
} from '../../ports/proxy-store.js';

/** How long the first snapshot may take before watchAll gives up (StoreError `unavailable`). */
export const FIRST_SNAPSHOT_WITHIN_MS = 30_000;

/** One document of a listing: the proxy it holds, or why it was skipped. */
export type ListedEntry = { proxy: ProxyResource } | { skipped: SkippedProxy };

export function watchProxies(
  proxies: CollectionReference,
  parse: (doc: DocumentSnapshot) => ProxyResource,
  storeFailure: (err: unknown) => Error,
  firstWithinMs = FIRST_SNAPSHOT_WITHIN_MS,
): Promise<ProxyView> {
  return new Promise((resolve, reject) => {
    const entries = new Map<string, ListedEntry>();
    let listing: ProxyListing | null = null;
    let first = true;
    let failure: Error | null = null;
    // Assigned by onSnapshot below; until then (it throwing, say) there is nothing to stop.
    let unsubscribe = () => {};
    const fail = (err: Error) => {
      failure ??= err;
      unsubscribe();
      clearTimeout(timer);
      if (first) reject(failure);
    };
    const view: ProxyView = {
      current: () => (listing ??= listingOf(entries)),
      failure: () => failure,
      stop: () => {
        clearTimeout(timer);
        unsubscribe();
      },
    };
    const timer = setTimeout(
      () =>
        fail(
          new StoreError('unavailable', `follow the proxies: no first snapshot within ${firstWithinMs} ms`),
        ),
      firstWithinMs,
    );
    unsubscribe = proxies.onSnapshot(
      (snap) => {
        if (failure) return;
        try {
          for (const change of snap.docChanges()) {
            const doc = change.doc;
            if (change.type === 'removed') entries.delete(doc.id);
            else entries.set(doc.id, listedEntry(doc, parse));
          }
        } catch (err) {
          fail(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        listing = null;
        if (first) {
          first = false;
          clearTimeout(timer);
          resolve(view);
        }
      },
      (err) => fail(storeFailure(err)),
    );
  });
}

/**
 * A document as a listing reads it (listAll, and this view): one that does not fit the model must not
 * hide the fleet from the API or the sweeps, and is named among the skipped (get() still reports it).
 */
export function listedEntry(
  doc: DocumentSnapshot,
  parse: (doc: DocumentSnapshot) => ProxyResource,
): ListedEntry {
  try {
    return { proxy: parse(doc) };
  } catch (err) {
    if (!(err instanceof InvalidStoredProxy)) throw err;
    return { skipped: { name: doc.id, issues: err.stored.issues } };
  }
}

/** The entries as a listing, in the order given. */
export function listingFrom(entries: Iterable<ListedEntry>): ProxyListing {
  const out: ProxyListing = { proxies: [], skipped: [] };
  for (const e of entries) {
    if ('proxy' in e) out.proxies.push(e.proxy);
    else out.skipped.push(e.skipped);
  }
  return out;
}

/** In name order, as a listing reads them. */
const listingOf = (entries: ReadonlyMap<string, ListedEntry>): ProxyListing =>
  listingFrom([...entries.keys()].sort().map((name) => entries.get(name)!));
