// The port over the `proxies` collection. Field ownership (brief: "one status writer"):
//   API       → name, uid, generation, createdAt, spec, deletionRequestedAt
//   reconcile → status (only through writeStatus, only when it changed) and the final delete
// Every write is conditional so that concurrent Pub/Sub deliveries can never lose an update.
import type { Phase, ProxyResource, ProxySpec, ProxyStatus } from '../domain/proxy.js';

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

export interface ProxyStore {
  get(name: string): Promise<StoredProxy | null>;
  list(filter?: ProxyFilter): Promise<ProxyResource[]>;
  /** Fails with StoreError kind 'already_exists' when the name is taken. */
  create(proxy: ProxyResource): Promise<void>;
  /** Replaces the spec when `expectedVersion` still matches; bumps generation only when the spec changed. */
  replaceSpec(name: string, spec: ProxySpec, expectedVersion: string): Promise<ConditionalWrite>;
  /**
   * Sets deletionRequestedAt if unset (idempotent). With `expectedVersion` (a conditional DELETE: If-Match),
   * only while the document is still at that version, which the caller read without deletionRequestedAt:
   * 'conflict' otherwise, and the caller re-reads.
   */
  requestDeletion(name: string, at: Date, expectedVersion?: string): Promise<ConditionalWrite>;
  /** The one status writer's write: only when the document is still at `expectedVersion`. */
  writeStatus(name: string, status: ProxyStatus, expectedVersion: string): Promise<ConditionalWrite>;
  /** Removes the document once its instance is gone (reconcileDelete's last step). */
  deleteDocument(name: string, expectedVersion: string): Promise<ConditionalWrite>;
  /** Names whose status.nextReconcileAt is at or before `until`, earliest first. */
  listDue(until: Date, limit: number): Promise<Array<{ name: string; nextReconcileAt: Date }>>;
  /**
   * The uid of EVERY document, those being deleted included: the orphan GC's live set (seed §8). Unlike
   * list(), nothing is skipped: a document whose uid cannot be read fails the call (StoreError 'invalid'),
   * because a live set missing one proxy would make that proxy's instance look orphaned.
   */
  liveUids(): Promise<Set<string>>;
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
