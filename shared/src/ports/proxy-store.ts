// The port over the `proxies` collection. Field ownership (brief: "one status writer"):
//   API       → name, uid, generation, createdAt, spec, deletionRequestedAt
//   reconcile → status (only through writeStatus, only when it changed) and the final delete
// Every write is conditional so that concurrent Pub/Sub deliveries can never lose an update.
import type { Phase, ProxyResource, ProxySpec, ProxyStatus } from '../domain/proxy.js';
import type { StoredIssue } from '../domain/stored-issues.js';

/** A proxy as read, with the version token that conditional writes compare against. */
export interface StoredProxy {
  proxy: ProxyResource;
  /** Opaque version of the document as read (Firestore: updateTime). */
  version: string;
}

export interface ProxyFilter {
  /** Every key must equal (attributes are a string map). */
  attributes?: Record<string, string>;
  phase?: Phase;
}

export type ConditionalWrite = 'written' | 'conflict' | 'gone';

/** A document list() left out because it does not fit the model. */
export interface SkippedProxy {
  name: string;
  issues: StoredIssue[];
}

/** What a listing read: the proxies, and the documents the same query matched that do not fit the model. */
export interface ProxyListing {
  proxies: ProxyResource[];
  skipped: SkippedProxy[];
}

/** One page of a listing (listPage): the matching documents of the page, in name order. */
export interface ProxyPage extends ProxyListing {
  /**
   * The name to start the next page after: the last document this page read (a skipped one too), so the
   * next page never reads it again and never misses one after it. Null when no document follows.
   */
  next: string | null;
}

/**
 * The whole `proxies` collection, followed as it changes (a listener): what a long-running reader sees
 * instead of a listing that ages — the probe's loop dials each proxy at the address its status names
 * now, not the one it named when the run began (reconcile clears an address the moment it sees the
 * instance stopped: GCE may hand it to another project's VM, and the probe sends proxy credentials).
 */
export interface ProxyView {
  /** The collection as last seen: the proxies that fit the model, and the documents that do not. */
  current(): ProxyListing;
  /** The listener's failure, once it has stopped following (the view is then as of that moment). */
  failure(): Error | null;
  stop(): void;
}

export interface ProxyWatcher {
  /** Resolves with the first full view of the collection (as many reads as listAll); follows it after. */
  watchAll(): Promise<ProxyView>;
}

export interface ProxyStore {
  get(name: string): Promise<StoredProxy | null>;
  /** The proxies that fit the model; a document that does not is left out (listAll says which). */
  list(filter?: ProxyFilter): Promise<ProxyResource[]>;
  /** list(), and the names of the documents it left out and why: a caller that must tell somebody. */
  listAll(filter?: ProxyFilter): Promise<ProxyListing>;
  /**
   * listAll() a page at a time: the documents matching `filter` whose names sort after `after` (all when
   * null), in name order, `size` of them at most — and one more read only to say whether a next page
   * exists, so that the last page is never an empty one — not the whole collection. A document created
   * meanwhile after the cursor is on a later page; one before it is not on any page of this pass.
   */
  listPage(filter: ProxyFilter, page: { after: string | null; size: number }): Promise<ProxyPage>;
  /** Fails with StoreError kind 'already_exists' when the name is taken. */
  create(proxy: ProxyResource): Promise<void>;
  /** Replaces the spec when `expectedVersion` still matches; bumps generation only when the spec changed. */
  replaceSpec(name: string, spec: ProxySpec, expectedVersion: string): Promise<ConditionalWrite>;
  /**
   * Sets deletionRequestedAt if unset (idempotent). Works on a document that does not fit the model too
   * (its version from InvalidStoredProxy): only that field is written, nothing else is read. With `expectedVersion` (a conditional DELETE: If-Match),
   * only while the document is still at that version, which the caller read without deletionRequestedAt:
   * 'conflict' otherwise, and the caller re-reads.
   */
  requestDeletion(name: string, at: Date, expectedVersion?: string): Promise<ConditionalWrite>;
  /** The one status writer's write: only when the document is still at `expectedVersion`. */
  writeStatus(name: string, status: ProxyStatus, expectedVersion: string): Promise<ConditionalWrite>;
  /**
   * Removes the document once its instance is gone (reconcileDelete's last step) — or, for a document that
   * does not fit the model and whose deletion was requested, at once (its instance is the orphan GC's).
   */
  deleteDocument(name: string, expectedVersion: string): Promise<ConditionalWrite>;
  /** Names whose status.nextReconcileAt is at or before `until` (and at or after `from`), earliest first. */
  listDue(until: Date, limit: number, from?: Date): Promise<Array<{ name: string; nextReconcileAt: Date }>>;
  /**
   * The uid of EVERY document, those being deleted included: the orphan GC's live set (seed §8). Unlike
   * list(), nothing is skipped: a document whose uid cannot be read fails the call (StoreError 'invalid'),
   * because a live set missing one proxy would make that proxy's instance look orphaned. `managed`: the
   * uids of those whose spec.mode is not 'external' — the only ones that can have an instance (a document
   * whose mode cannot be read is counted managed: see the Firestore store).
   */
  liveUids(): Promise<LiveUids>;
  /**
   * Whether a document holds this uid, or any uid naming the same instance (compared as uidKey makes them,
   * instance-name.ts: the first 20 hex digits, lower-cased — the uid in capitals or any mix of cases, or
   * with its last 12 digits changed, is the same instance, on either side) — one being deleted, or one that
   * no longer fits the model, too: only the raw `uid` field is read, so such a document still claims the
   * instance named after it. Indexed lookups, not
   * liveUids()'s read of every document: for a caller asking about one instance (reconcile's
   * unrecorded-instance request). A document with no uid holds none, and claims nothing. Throws a
   * RangeError for a `uid` that is not a UUID (it names no instance).
   */
  holdsUid(uid: string): Promise<boolean>;
  /**
   * Whether a document's status records this instance (`status.providerId`, the raw field): that proxy's
   * passes own it, whatever its uid — one whose uid field is gone (a console edit) included, which
   * holdsUid cannot see. One indexed lookup, for the unrecorded-instance request as holdsUid.
   */
  recordsInstance(providerId: string): Promise<boolean>;
}

/** ProxyStore.liveUids's answer: every document's uid, and those of them that may have an instance. */
export interface LiveUids {
  uids: Set<string>;
  managed: Set<string>;
}

export class StoreError extends Error {
  constructor(
    /** `invalid`: a stored document no longer fits the model (a reader logs and skips it, never retries). */
    readonly kind: 'already_exists' | 'not_found' | 'unavailable' | 'invalid',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/**
 * get() of a document that no longer fits the model (hand-edited, half-written by an old version, a field
 * of the wrong type): what could still be read of it, without trusting the rest. `issues` name the fields
 * that failed, never their values.
 */
export class InvalidStoredProxy extends StoreError {
  constructor(
    readonly stored: {
      name: string;
      /** The document's version as read: a conditional write (requestDeletion, deleteDocument) on it. */
      version: string;
      issues: StoredIssue[];
      /** The uid, when it is a non-empty string (the instance is named after it). */
      uid: string | null;
      /** The generation, when it is a positive integer (If-Match compares against it). */
      generation: number | null;
      /** When it is a timestamp; null when absent or not a timestamp. */
      deletionRequestedAt: Date | null;
    },
    options?: { cause?: unknown },
  ) {
    super('invalid', `document proxies/${stored.name} does not fit the Proxy model`, options);
    this.name = 'InvalidStoredProxy';
  }
}
