// OwnershipGate for the lease service: a live local view (snapshot listeners) of which proxies a gateway
// worker owns and which are reclaimed, so a lease decision costs no read. A listener's view may trail the
// planner by its delivery delay; the planner in turn never assigns a proxy with active leases
// (ownership-lease-activity.ts), so each side refuses what the other holds.
import type { Firestore } from '@google-cloud/firestore';
import { Timestamp } from '@google-cloud/firestore';
import type { ProxyResource } from '../../domain/proxy.js';
import { leasableBesideGateway } from '../../domain/workers/leasable.js';
import type { Clock } from '../../ports/clock.js';
import type { OwnershipGate } from '../../ports/workers-ownership.js';
import { Collections } from './collections.js';
import { STATE_DOC } from './ownership-store.js';

export class FirestoreOwnershipGate implements OwnershipGate {
  private owned = new Map<string, Set<string>>();
  private reclaims = new Map<string, Date>();
  private loaded = { ownership: false, reclaims: false };
  private readyResolvers: Array<() => void> = [];
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly db: Firestore,
    private readonly clock: Clock,
  ) {}

  start(): this {
    this.unsubscribe.push(
      this.db.collection(Collections.ownership).onSnapshot((snap) => {
        for (const change of snap.docChanges()) {
          if (change.doc.id === STATE_DOC) continue;
          const proxies = change.type === 'removed' ? {} : (change.doc.get('proxies') ?? {});
          this.owned.set(change.doc.id, new Set(Object.keys(proxies as object)));
        }
        this.markLoaded('ownership');
      }),
      this.db.collection(Collections.reclaims).onSnapshot((snap) => {
        for (const change of snap.docChanges()) {
          const until = change.doc.get('until');
          if (change.type === 'removed' || !(until instanceof Timestamp)) this.reclaims.delete(change.doc.id);
          else this.reclaims.set(change.doc.id, until.toDate());
        }
        this.markLoaded('reclaims');
      }),
    );
    return this;
  }

  /** Resolves once both views have loaded. */
  ready(): Promise<void> {
    if (this.loaded.ownership && this.loaded.reclaims) return Promise.resolve();
    return new Promise((resolve) => this.readyResolvers.push(resolve));
  }

  isOwned(proxy: string): boolean {
    for (const names of this.owned.values()) if (names.has(proxy)) return true;
    return false;
  }

  isReclaimed(proxy: string): boolean {
    const until = this.reclaims.get(proxy);
    return until !== undefined && until.getTime() > this.clock.now().getTime();
  }

  leasable(proxy: ProxyResource): boolean {
    // Before the first view has loaded nothing is known: fail closed.
    if (!this.loaded.ownership || !this.loaded.reclaims) return false;
    return leasableBesideGateway(proxy, this.isOwned(proxy.name), this.isReclaimed(proxy.name));
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
  }

  private markLoaded(which: 'ownership' | 'reclaims'): void {
    this.loaded[which] = true;
    if (this.loaded.ownership && this.loaded.reclaims) for (const r of this.readyResolvers.splice(0)) r();
  }
}
