// The ProxyStore port on Firestore: collection `proxies`, one document per proxy named by the proxy.
// Every write that depends on what was read is a precondition write on the document's updateTime
// (the port's `version`), not a transaction: the emulator locks pessimistically and stalls contending
// transactions, while precondition writes fail fast with FAILED_PRECONDITION and behave the same on GCP
// (../shared/design/gcp-offline-recipes.md §7). A commit the client resent after it landed fails its own
// precondition, and one whose call failed otherwise after it landed (DEADLINE_EXCEEDED, a last
// UNAVAILABLE) fails with its write stored, so every such write leaves a mark of its own on the document —
// the uid of a create, a spec or status write's id (write-mark.ts), the time of a deletion request — and
// any failure is first checked against it: the write is there, not lost.
// A call given up at the store's deadline (callDeadlineMs: the API sets one) is such a failure too: its
// write may still land, so it is an unknown outcome — checked against the mark like the others, and
// reported unavailable when the mark is not (yet) there, never as "not written".
import {
  type CollectionReference,
  type DocumentReference,
  type DocumentSnapshot,
  FieldPath,
  FieldValue,
  type Firestore,
  type Query,
  type QueryDocumentSnapshot,
  Timestamp,
} from '@google-cloud/firestore';
import { ZodError } from 'zod';
import { uidKey, uidKeyPrefixes } from '../../domain/instance-name.js';
import type { ProxyResource, ProxySpec, ProxyStatus } from '../../domain/proxy.js';
import { canonicalJson } from '../../domain/spec-hash.js';
import { storedIssues } from '../../domain/stored-issues.js';
import {
  type ConditionalWrite,
  InvalidStoredProxy,
  type LiveUids,
  type ProxyFilter,
  type ProxyListing,
  type ProxyPage,
  type ProxyStore,
  type ProxyView,
  type ProxyWatcher,
  type StoredProxy,
  StoreError,
} from '../../ports/proxy-store.js';
import { boundFirestoreCall } from '../deadline.js';
import { Collections } from './collections.js';
import {
  proxyFromFirestore,
  proxyToFirestore,
  specToFirestore,
  statusToFirestore,
  timestampOfVersion,
  versionOf,
} from './proxy-converter.js';
import { FIRST_SNAPSHOT_WITHIN_MS, listedEntry, listingFrom, watchProxies } from './proxy-watch.js';
import { carriesWrite, newWriteId } from './write-mark.js';

// gRPC codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html) the client surfaces as `code`.
const ALREADY_EXISTS = 6;
const FAILED_PRECONDITION = 9;
const NOT_FOUND = 5;
// What a retry may fix. Besides Firestore's own transient codes: UNAUTHENTICATED, an access token that
// expired or could not be refreshed in time (Secret Manager's and Compute's adapters take it as transient
// too); UNKNOWN, which grpc-js reports for a failed call-credentials fetch ("Getting metadata from plugin
// failed…": the metadata server's token endpoint not answering); CANCELLED, a call cut by the client
// (its channel closed under it, e.g. while the process shuts down). None says the request or our code is
// wrong — those are INVALID_ARGUMENT, PERMISSION_DENIED and the like, which still propagate as bugs.
const RETRYABLE = new Set([
  1 /* CANCELLED */, 2 /* UNKNOWN */, 4 /* DEADLINE_EXCEEDED */, 8 /* RESOURCE_EXHAUSTED */, 10 /* ABORTED */,
  13 /* INTERNAL */, 14 /* UNAVAILABLE */, 16 /* UNAUTHENTICATED */,
]);

const codeOf = (err: unknown): number | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
};

/**
 * How much of a transient failure's own message its StoreError carries. The code alone does not say why: a
 * 16 or a 2 whose message reads "Getting metadata from plugin failed with error: Could not refresh access
 * token…" is the service's credential, and recover() logs a StoreError's message, not its cause's. Only
 * for these codes, whose messages are gRPC's transport and auth text (no document's fields or values:
 * those come with INVALID_ARGUMENT and the like, which propagate as they came); clipped all the same.
 */
const CAUSE_MESSAGE_CHARS = 300;

const clippedMessage = (err: unknown): string => {
  const message = err instanceof Error ? err.message : String(err);
  const flat = message.replace(/\s+/g, ' ').trim();
  return flat.length > CAUSE_MESSAGE_CHARS ? `${flat.slice(0, CAUSE_MESSAGE_CHARS)}…` : flat;
};

/** Callers see StoreError('unavailable') for what a retry may fix; anything else is a bug and propagates. */
function storeFailure(err: unknown, what: string): unknown {
  const code = codeOf(err);
  return code !== undefined && RETRYABLE.has(code)
    ? new StoreError('unavailable', `${what}: Firestore code ${code}: ${clippedMessage(err)}`, { cause: err })
    : err;
}

// The spec's writer (the API) and the status's (reconcile) mark a field each: with one mark, a status write
// landing between a spec write and its resend erased the spec write's mark, and a PUT with If-Match
// answered 412 for its own edit — and a spec edit did the same to a status write.
const SPEC_WRITE_ID = 'specWriteId';
const STATUS_WRITE_ID = 'statusWriteId';
/** The mark both wrote before: dropped by either, so that no stale id stays on the document. */
const SHARED_WRITE_ID = 'writeId';

/** requestDeletion has no caller version: it re-reads on a lost race, this many times. */
const DELETION_ATTEMPTS = 5;
/** Uids read per prefix range of holdsUid; a range that fills it is taken as holding the uid. */
const HOLDS_UID_PAGE = 200;

export interface FirestoreProxyStoreOptions {
  collection?: string;
  /** How long watchAll waits for its first snapshot. */
  firstSnapshotWithinMs?: number;
  /**
   * The longest one Firestore call (a read, a query, a write, the check of a write's mark) may take before
   * it is given up as StoreError('unavailable'); the call itself runs on, unheard. Unset: no bound but the
   * client's own (300 s per attempt for reads and queries) — the functions', whose runs have a timeout of
   * their own. The API sets one (wiring.ts): its caller is waiting, and a retry after a 503 serves it.
   */
  callDeadlineMs?: number;
  /**
   * listAll's bound instead of callDeadlineMs (defaults to it): its query reads the whole collection, and a
   * large fleet takes longer to stream than one document or page. The API sets a longer one (wiring.ts) for
   * its unpaged list; paged listings (listPage) keep callDeadlineMs.
   */
  listAllDeadlineMs?: number;
}

export class FirestoreProxyStore implements ProxyStore, ProxyWatcher {
  private readonly proxies: CollectionReference;
  private readonly firstSnapshotWithinMs: number;
  private readonly callDeadlineMs: number | undefined;
  private readonly listAllDeadlineMs: number | undefined;

  constructor(firestore: Firestore, options: FirestoreProxyStoreOptions = {}) {
    this.proxies = firestore.collection(options.collection ?? Collections.proxies);
    this.firstSnapshotWithinMs = options.firstSnapshotWithinMs ?? FIRST_SNAPSHOT_WITHIN_MS;
    this.callDeadlineMs = options.callDeadlineMs;
    this.listAllDeadlineMs = options.listAllDeadlineMs ?? options.callDeadlineMs;
  }

  async get(name: string): Promise<StoredProxy | null> {
    const snap = await this.read(name);
    return snap.exists ? { proxy: this.parse(snap), version: versionOf(snap.updateTime!) } : null;
  }

  async list(filter: ProxyFilter = {}): Promise<ProxyResource[]> {
    return (await this.listAll(filter)).proxies;
  }

  async listAll(filter: ProxyFilter = {}): Promise<ProxyListing> {
    const query = this.filtered(filter);
    const snaps = await this.run(() => query.get(), 'list proxies', this.listAllDeadlineMs);
    return this.listingOf(snaps.docs);
  }

  /** The collection followed by a listener (proxy-watch.ts). */
  watchAll(): Promise<ProxyView> {
    return watchProxies(
      this.proxies,
      (doc) => this.parse(doc),
      (err) => {
        const f = storeFailure(err, 'follow the proxies');
        return f instanceof Error ? f : new Error(String(f));
      },
      this.firstSnapshotWithinMs,
    );
  }

  // Equality filters and the document-id order (ascending, as every single-field index ends) are served
  // by merging the automatic single-field indexes: no composite index (terraform/firestore.tf declares
  // none for proxies). startAfter(name) + limit: a page reads only its own documents.
  async listPage(filter: ProxyFilter, page: { after: string | null; size: number }): Promise<ProxyPage> {
    let query = this.filtered(filter)
      .orderBy(FieldPath.documentId())
      .limit(page.size + 1);
    if (page.after !== null) query = query.startAfter(page.after);
    const snaps = await this.run(() => query.get(), 'list a page of proxies');
    const docs = snaps.docs.slice(0, page.size);
    return {
      ...this.listingOf(docs),
      next: snaps.size > page.size ? docs[docs.length - 1]!.id : null,
    };
  }

  private filtered(filter: ProxyFilter): Query {
    let query: Query = this.proxies;
    if (filter.phase) query = query.where('status.phase', '==', filter.phase);
    for (const [key, value] of Object.entries(filter.attributes ?? {})) {
      query = query.where(new FieldPath('spec', 'attributes', key), '==', value);
    }
    return query;
  }

  private listingOf(docs: readonly QueryDocumentSnapshot[]): ProxyListing {
    return listingFrom(docs.map((doc) => listedEntry(doc, (d) => this.parse(d))));
  }

  async create(proxy: ProxyResource): Promise<void> {
    // The uid, new for this create, tells its own document apart.
    const own = (snap: DocumentSnapshot) => snap.exists && snap.get('uid') === proxy.uid;
    try {
      await this.bounded(
        () => this.proxies.doc(proxy.name).create(proxyToFirestore(proxy)),
        `create ${proxy.name}`,
      );
    } catch (err) {
      if (codeOf(err) !== ALREADY_EXISTS) {
        // Landed, then the call failed (DEADLINE_EXCEEDED, a last UNAVAILABLE, given up at the deadline):
        // reported unavailable, the API answered 503 and published no reconcile request, and a retried
        // POST got 409. Given up and not landed yet: unavailable, an unknown outcome (a retried POST may
        // meet it landed: 409).
        if (await this.shows(proxy.name, own)) return;
        throw storeFailure(err, `create ${proxy.name}`);
      }
      // The client library retries a commit whose answer was lost (UNAVAILABLE, ABORTED): the retry of a
      // create that landed finds its own document.
      if (own(await this.read(proxy.name))) return;
      throw new StoreError('already_exists', `proxy ${proxy.name} exists`, { cause: err });
    }
  }

  async replaceSpec(name: string, spec: ProxySpec, expectedVersion: string): Promise<ConditionalWrite> {
    const snap = await this.read(name);
    if (!snap.exists) return 'gone';
    if (versionOf(snap.updateTime!) !== expectedVersion) return 'conflict';
    const current = this.parse(snap);
    // An identical spec is a no-op: no write, no generation bump (an idempotent PUT costs nothing).
    if (canonicalJson(current.spec) === canonicalJson(spec)) return 'written';
    const writeId = newWriteId();
    return this.conditional(
      name,
      expectedVersion,
      (ref, lastUpdateTime) =>
        ref.update(
          {
            spec: specToFirestore(spec),
            generation: current.generation + 1,
            [SPEC_WRITE_ID]: writeId,
            [SHARED_WRITE_ID]: FieldValue.delete(),
          },
          { lastUpdateTime },
        ),
      (snap) => carriesWrite(snap, writeId, SPEC_WRITE_ID),
    );
  }

  async requestDeletion(name: string, at: Date, expectedVersion?: string): Promise<ConditionalWrite> {
    const requested = Timestamp.fromDate(at);
    const update = (ref: DocumentReference, lastUpdateTime: Timestamp) =>
      ref.update({ deletionRequestedAt: requested }, { lastUpdateTime });
    const landed = (snap: DocumentSnapshot) => {
      const stored = snap.get('deletionRequestedAt');
      return stored instanceof Timestamp && stored.isEqual(requested);
    };
    if (expectedVersion !== undefined) return this.conditional(name, expectedVersion, update, landed);
    for (let attempt = 0; attempt < DELETION_ATTEMPTS; attempt++) {
      const snap = await this.read(name);
      if (!snap.exists) return 'gone';
      // Only a Timestamp counts as requested: a hand-edited string there is overwritten, not taken for one.
      if (snap.get('deletionRequestedAt') instanceof Timestamp) return 'written';
      const outcome = await this.conditional(name, versionOf(snap.updateTime!), update, landed);
      if (outcome !== 'conflict') return outcome;
    }
    return 'conflict';
  }

  writeStatus(name: string, status: ProxyStatus, expectedVersion: string): Promise<ConditionalWrite> {
    const writeId = newWriteId();
    return this.conditional(
      name,
      expectedVersion,
      (ref, lastUpdateTime) =>
        ref.update(
          {
            status: statusToFirestore(status),
            [STATUS_WRITE_ID]: writeId,
            [SHARED_WRITE_ID]: FieldValue.delete(),
          },
          { lastUpdateTime },
        ),
      (snap) => carriesWrite(snap, writeId, STATUS_WRITE_ID),
    );
  }

  deleteDocument(name: string, expectedVersion: string): Promise<ConditionalWrite> {
    return this.conditional(name, expectedVersion, (ref, lastUpdateTime) => ref.delete({ lastUpdateTime }));
  }

  async listDue(
    until: Date,
    limit: number,
    from?: Date,
  ): Promise<Array<{ name: string; nextReconcileAt: Date }>> {
    // A range on one field ordered by that field is served by the automatic single-field index.
    // Documents whose nextReconcileAt is null never match a Timestamp range.
    const upTo = this.proxies.where('status.nextReconcileAt', '<=', Timestamp.fromDate(until));
    const range = from ? upTo.where('status.nextReconcileAt', '>=', Timestamp.fromDate(from)) : upTo;
    const snaps = await this.run(
      () => range.orderBy('status.nextReconcileAt').limit(limit).select('status.nextReconcileAt').get(),
      'list due proxies',
    );
    return snaps.docs.map((d) => ({
      name: d.id,
      nextReconcileAt: (d.get('status.nextReconcileAt') as Timestamp).toDate(),
    }));
  }

  async liveUids(): Promise<LiveUids> {
    // Only the uid and the mode are read, raw: a document that no longer fits the model still protects its
    // instance.
    const snaps = await this.run(() => this.proxies.select('uid', 'spec.mode').get(), 'list proxy uids');
    const uids = new Set<string>();
    const managed = new Set<string>();
    for (const doc of snaps.docs) {
      const uid: unknown = doc.get('uid');
      if (typeof uid !== 'string' || uid === '') {
        throw new StoreError('invalid', `document proxies/${doc.id} has no uid: the live set is incomplete`);
      }
      uids.add(uid);
      // Only a mode that reads 'external' makes a proxy without an instance. Any other (missing, misspelt)
      // counts as managed: the GC weighs orphans against the managed proxies whose instance its listing
      // did not see, as an upper bound on the live instances a missed zone may hold, and refuses only when
      // even that bound falls short — counted external, such a document could have a VM there and make
      // that refusal's claim false. The cost, a deferral where a refusal was due, deletes nothing either.
      if (doc.get('spec.mode') !== 'external') managed.add(uid);
    }
    return { uids, managed };
  }

  async holdsUid(uid: string): Promise<boolean> {
    // Prefix ranges on the raw field, one per spelling of the uid's leading hex letters (uidKeyPrefixes: at
    // most 8, so that a uid stored in any mix of cases is found — the lower- and upper-case ranges alone
    // missed a console edit's "C0ffee00-…"), each served by the automatic single-field index on `uid`
    // (terraform/firestore.tf exempts no field of proxies); what they find is confirmed with uidKey, the
    // one comparison. Only the uid is read, so a document that no longer fits the model still claims its
    // instance, as in liveUids. An equality on the whole uid would miss a live proxy whose uid the request
    // spells another way, and have its instance deleted.
    const key = uidKey(uid);
    const pages = await Promise.all(
      uidKeyPrefixes(uid).map((prefix) =>
        this.run(
          () =>
            this.proxies
              .where('uid', '>=', prefix)
              .where('uid', '<', `${prefix}\uf8ff`)
              .limit(HOLDS_UID_PAGE)
              .select('uid')
              .get(),
          'find the proxy holding a uid',
        ),
      ),
    );
    for (const snaps of pages) {
      for (const doc of snaps.docs) {
        const held: unknown = doc.get('uid');
        if (typeof held === 'string' && uidKey(held) === key) return true;
      }
      // More uids share the prefix than one page holds (at least 3 hex digits: never seen in a fleet of
      // any size): unsure, so held — the caller deletes nothing, and leaves the instance to the GC.
      if (snaps.size >= HOLDS_UID_PAGE) return true;
    }
    return false;
  }

  async recordsInstance(providerId: string): Promise<boolean> {
    // An equality on the raw field (the automatic single-field index on status.providerId), selecting
    // only it: a document that no longer fits the model, or has no uid, still claims what it recorded.
    const snaps = await this.run(
      () => this.proxies.where('status.providerId', '==', providerId).limit(1).select('uid').get(),
      'find the proxy recording an instance',
    );
    return !snaps.empty;
  }

  private parse(snap: DocumentSnapshot): ProxyResource {
    const data = snap.data()!;
    try {
      return proxyFromFirestore(data, snap.id);
    } catch (err) {
      const issues =
        err instanceof ZodError
          ? storedIssues(err)
          : [{ path: '', code: 'unreadable', message: 'the document could not be read as a proxy' }];
      const { uid, generation, deletionRequestedAt } = data;
      throw new InvalidStoredProxy(
        {
          name: snap.id,
          version: versionOf(snap.updateTime!),
          issues,
          uid: typeof uid === 'string' && uid !== '' ? uid : null,
          generation: Number.isSafeInteger(generation) && generation > 0 ? generation : null,
          deletionRequestedAt: deletionRequestedAt instanceof Timestamp ? deletionRequestedAt.toDate() : null,
        },
        { cause: err },
      );
    }
  }

  private read(name: string): Promise<DocumentSnapshot> {
    return this.run(() => this.proxies.doc(name).get(), `read ${name}`);
  }

  private async run<T>(op: () => Promise<T>, what: string, ms = this.callDeadlineMs): Promise<T> {
    try {
      return await this.bounded(op, what, ms);
    } catch (err) {
      throw storeFailure(err, what);
    }
  }

  /** `call`, given up at `ms` (when set) as StoreError('unavailable'): it runs on, unheard. */
  private bounded<T>(call: () => Promise<T>, what: string, ms = this.callDeadlineMs): Promise<T> {
    return boundFirestoreCall(ms, what, call, (message) => new StoreError('unavailable', message));
  }

  /**
   * A precondition write; FAILED_PRECONDITION means "changed since" or "deleted since" — or, when `landed`
   * finds the write's own mark on the document, that this write landed on an attempt whose answer was
   * lost (see the top): one read tells which. Any other failure is first checked against the mark too.
   */
  private async conditional(
    name: string,
    expectedVersion: string,
    write: (ref: DocumentReference, lastUpdateTime: Timestamp) => Promise<unknown>,
    landed?: (snap: DocumentSnapshot) => boolean,
  ): Promise<ConditionalWrite> {
    const lastUpdateTime = timestampOfVersion(expectedVersion);
    const ref = this.proxies.doc(name);
    if (!lastUpdateTime) return (await this.read(name)).exists ? 'conflict' : 'gone';
    try {
      await this.bounded(() => write(ref, lastUpdateTime), `write ${name}`);
      return 'written';
    } catch (err) {
      const code = codeOf(err);
      if (code === FAILED_PRECONDITION || code === NOT_FOUND) {
        const snap = await this.read(name);
        if (!snap.exists) return 'gone';
        return landed?.(snap) ? 'written' : 'conflict';
      }
      // Landed, then the call failed otherwise (DEADLINE_EXCEEDED, a last UNAVAILABLE, given up at the
      // deadline): taken for unavailable, the API answered 503 for a change it had made and published no
      // reconcile request. Not shown (not landed yet, or unreadable): unavailable — never 'conflict' or
      // 'gone', which would tell a caller the write was not made while it may still land.
      if (landed && (await this.shows(name, landed))) return 'written';
      throw storeFailure(err, `write ${name}`);
    }
  }

  /** Whether the document shows `landed` (false when it cannot be read: the write's own failure stands). */
  private async shows(name: string, landed: (snap: DocumentSnapshot) => boolean): Promise<boolean> {
    try {
      return landed(await this.bounded(() => this.proxies.doc(name).get(), `read ${name}`));
    } catch {
      return false;
    }
  }
}
