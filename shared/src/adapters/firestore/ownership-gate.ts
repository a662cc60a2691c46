// OwnershipGate for the lease service: a live local view (listeners) of which proxies a gateway worker
// owns and which are reclaimed, so a lease decision costs no read. A listener's view may trail the
// planner by its delivery delay; the planner in turn never assigns a proxy with active leases
// (ownership-lease-activity.ts), so each side refuses what the other holds. The listeners re-subscribe
// by themselves (lease-listener.ts); while one is down, pool proxies fail closed (domain/workers/leasable.ts).
import type { DocumentChange, Firestore, QueryDocumentSnapshot, Timestamp } from '@google-cloud/firestore';
import type { ProxyResource } from '../../domain/proxy.js';
import { gatewayClaimSettled, leasableBesideGateway } from '../../domain/workers/leasable.js';
import { recordOf } from '../../domain/workers/ownership.js';
import { reclaimHolds } from '../../domain/workers/reclaim-holds.js';
import type { Clock } from '../../ports/clock.js';
import type { OwnershipGate } from '../../ports/workers-ownership.js';
import { jsonLogger, type Logger } from '../log/json-logger.js';
import { Collections } from './collections.js';
import { type CollectionListener, listenCollection } from './lease-listener.js';
import { logInvalidReclaim, readReclaim } from './ownership-reclaim-store.js';
import { STATE_DOC, shardDocId, shardOf } from './ownership-store.js';

type View = 'ownership' | 'reclaims';

export class FirestoreOwnershipGate implements OwnershipGate {
  /** Per shard document: the proxies it names, each with the uid its record keeps (null: none kept). */
  private owned = new Map<string, Map<string, string | null>>();
  private reclaims = new Map<string, { until: Date; uid: string | null }>();
  /** Per reclaim document out of shape: the version already logged (a re-subscription reads it again). */
  private invalidReclaims = new Map<string, Timestamp>();
  /** The ownership epoch of the last ownership/state this view saw (null: none yet). */
  private epoch: number | null = null;
  /** Loaded at least once (else nothing is known: fail closed). */
  private loaded = { ownership: false, reclaims: false };
  /** Not broken since its last full snapshot. */
  private current = { ownership: false, reclaims: false };
  private listeners: CollectionListener[] = [];
  private readonly log: Logger;

  constructor(
    private readonly db: Firestore,
    private readonly clock: Clock,
    opts: { log?: Logger } = {},
  ) {
    this.log = opts.log ?? jsonLogger({ component: 'ownership-gate' });
  }

  start(): this {
    if (this.listeners.length > 0) return this;
    this.listeners.push(
      this.listen(
        'ownership',
        Collections.ownership,
        (doc) => {
          if (doc.id === STATE_DOC) {
            // One listener over the collection: a snapshot that carries an epoch carries the shard
            // writes committed with it (ownership-store.ts commits both in one batch).
            const epoch = doc.get('epoch');
            this.epoch = Number.isInteger(epoch) ? (epoch as number) : null;
            return;
          }
          this.owned.set(doc.id, ownedIn(doc.get('proxies')));
        },
        (id) => {
          if (id === STATE_DOC) this.epoch = null;
          else this.owned.delete(id);
        },
      ),
      this.listen(
        'reclaims',
        Collections.reclaims,
        (doc) => this.upsertReclaim(doc),
        (id) => {
          this.reclaims.delete(id);
          this.invalidReclaims.delete(id);
        },
      ),
    );
    return this;
  }

  /** Resolves once both views have loaded; rejects after `timeoutMs` when given. */
  async ready(timeoutMs = 2 ** 31 - 1): Promise<void> {
    if (this.listeners.length === 0) throw new Error('ownership gate not started');
    await Promise.all(this.listeners.map((l) => l.ready(timeoutMs)));
  }

  /**
   * Whether a worker owns the proxy of that name — of that uid, when given: a record kept for a proxy since
   * deleted is not the new one's under its name (ownership.ts recordOf), which the planner gives out only
   * once that record has gone; until then a new one outside the pool is leasable.
   */
  isOwned(proxy: string, uid?: string): boolean {
    // A proxy's ownership lives in exactly one shard document: one lookup, not one per shard.
    const shard = this.owned.get(shardDocId(shardOf(proxy)));
    if (!shard?.has(proxy)) return false;
    return uid === undefined || recordOf({ uid: shard.get(proxy) ?? null }, uid);
  }

  /** A running reclaim asked for this proxy (not a namesake deleted since). */
  isReclaimed(proxy: Pick<ProxyResource, 'name' | 'uid'>): boolean {
    const r = this.reclaims.get(proxy.name);
    return r !== undefined && r.until.getTime() > this.clock.now().getTime() && reclaimHolds(r, proxy.uid);
  }

  leasable(proxy: ProxyResource): boolean {
    if (!this.loaded.ownership || !this.loaded.reclaims) return false;
    const current = this.current.ownership && this.current.reclaims;
    return leasableBesideGateway(
      proxy,
      this.isOwned(proxy.name, proxy.uid),
      this.isReclaimed(proxy),
      current,
    );
  }

  following(): boolean {
    const { loaded, current } = this;
    return loaded.ownership && loaded.reclaims && current.ownership && current.reclaims;
  }

  claimSettled(proxy: string, claimEpoch: number, uid?: string): boolean {
    return gatewayClaimSettled(claimEpoch, {
      epoch: this.loaded.ownership ? this.epoch : null,
      owned: this.isOwned(proxy, uid),
    });
  }

  stop(): void {
    for (const l of this.listeners.splice(0)) l.stop();
  }

  /** As the planner reads it (ownership-reclaim-store.ts): one that does not fit is no reclaim. */
  private upsertReclaim(doc: QueryDocumentSnapshot): void {
    const read = readReclaim(doc.data());
    if ('reclaim' in read) {
      this.reclaims.set(doc.id, { until: read.reclaim.until, uid: read.reclaim.uid });
      this.invalidReclaims.delete(doc.id);
      return;
    }
    this.reclaims.delete(doc.id);
    // Once per version of the document: every instance of the lease service follows it, and a
    // re-subscription hands every document over again; a new edit is logged anew.
    if (this.invalidReclaims.get(doc.id)?.isEqual(doc.updateTime)) return;
    this.invalidReclaims.set(doc.id, doc.updateTime);
    logInvalidReclaim(this.log, doc.id, read.fields);
  }

  private listen(
    view: View,
    collection: string,
    upsert: (doc: QueryDocumentSnapshot) => void,
    remove: (id: string) => void,
  ): CollectionListener {
    const clear =
      view === 'ownership'
        ? () => {
            this.owned.clear();
            this.epoch = null;
          }
        : () => this.reclaims.clear();
    return listenCollection(
      this.db.collection(collection),
      {
        reset: (docs) => {
          clear();
          for (const d of docs) upsert(d);
          this.loaded[view] = true;
          this.current[view] = true;
        },
        apply: (changes: readonly DocumentChange[]) => {
          for (const c of changes) {
            if (c.type === 'removed') remove(c.doc.id);
            else upsert(c.doc);
          }
        },
      },
      {
        name: `ownership gate ${collection}`,
        log: this.log,
        onError: () => {
          this.current[view] = false;
        },
      },
    );
  }
}

/** A shard document's proxies and the uid each record keeps (null when none, or not a string). */
function ownedIn(proxies: unknown): Map<string, string | null> {
  const owned = new Map<string, string | null>();
  for (const [name, r] of Object.entries((proxies as object | undefined) ?? {})) {
    const uid = (r as { uid?: unknown } | null)?.uid;
    owned.set(name, typeof uid === 'string' && uid !== '' ? uid : null);
  }
  return owned;
}
