// The gateway pool as the snapshot function sees it: the proxies whose spec puts them in the pool, by a
// query on spec.gatewayPool (Firestore's automatic single-field index), so a pass reads the pool rather
// than the whole fleet. A document that no longer fits the model is skipped, as the proxy store's list()
// does: its ownership record (if any) then drains and clears like a proxy that left the pool.
import type { Firestore } from '@google-cloud/firestore';
import type { ProxyResource } from '../../domain/proxy.js';
import type { GatewayPoolReader } from '../../ports/workers-snapshots.js';
import { Collections } from './collections.js';
import { proxyFromFirestore } from './proxy-converter.js';
import { boundedCall, deadlinesOf, type WorkerStoreDeadlines } from './worker-deadline.js';
import { workerStoreFailure } from './worker-errors.js';

export class FirestoreGatewayPoolReader implements GatewayPoolReader {
  private readonly deadlines: { call?: number; list?: number };

  /** `opts`: the deadline of the pool's query (an unpaged listing: listDeadlineMs), worker-deadline.ts. */
  constructor(
    private readonly db: Firestore,
    opts: WorkerStoreDeadlines = {},
  ) {
    this.deadlines = deadlinesOf(opts);
  }

  async inPool(): Promise<{ proxies: ProxyResource[]; skipped: string[] }> {
    let docs: FirebaseFirestore.QueryDocumentSnapshot[];
    try {
      const query = this.db.collection(Collections.proxies).where('spec.gatewayPool', '==', true);
      docs = (await boundedCall(this.deadlines.list, 'list the gateway pool', () => query.get())).docs;
    } catch (err) {
      throw workerStoreFailure(err, 'list the gateway pool');
    }
    const proxies: ProxyResource[] = [];
    const skipped: string[] = [];
    for (const d of docs) {
      try {
        proxies.push(proxyFromFirestore(d.data(), d.id));
      } catch {
        skipped.push(d.id);
      }
    }
    return { proxies, skipped };
  }
}
