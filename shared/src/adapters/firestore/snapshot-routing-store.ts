// gatewayConfig/routing: the ordered routes every worker's snapshot carries, written by the admin API. A
// document that no longer fits the route schema fails the pass (WorkerStoreError `invalid`) rather than
// silently falling back to the default routing: workers keep their last snapshot until it is fixed. The
// one exception is a routing whose only fault is a repeated route name (stored before the API refused
// that): it is read with the later duplicates dropped and named (domain/snapshots/stored-routing.ts), so
// the pass goes on and logs it instead of failing every time. Writes must fit the wire schema whole.
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import { firstOfEachName } from '../../domain/snapshots/stored-routing.js';
import { RoutingRule, RoutingRules } from '../../messages/gateway-snapshot.js';
import type { RoutingConfig, RoutingStore, StoredRouting } from '../../ports/workers-ownership.js';
import { Collections } from './collections.js';
import { workerStoreFailure } from './worker-errors.js';

export const ROUTING_DOC = 'routing';

const RoutingDoc = z.object({
  routes: z.array(RoutingRule).max(1000),
  updatedAt: z.instanceof(Timestamp).transform((t) => t.toDate()),
  updatedBy: z.string(),
});

export class FirestoreRoutingStore implements RoutingStore {
  constructor(private readonly db: Firestore) {}

  private ref() {
    return this.db.collection(Collections.gatewayConfig).doc(ROUTING_DOC);
  }

  async get(): Promise<StoredRouting | null> {
    try {
      const snap = await this.ref().get();
      if (!snap.exists) return null;
      const doc = RoutingDoc.parse(snap.data());
      return { ...doc, ...firstOfEachName(doc.routes) };
    } catch (err) {
      throw workerStoreFailure(err, 'read the gateway routing');
    }
  }

  async put(config: RoutingConfig): Promise<void> {
    try {
      // JSON round trip: drops undefined optionals, which Firestore refuses.
      await this.ref().set({
        routes: JSON.parse(JSON.stringify(RoutingRules.parse(config.routes))),
        updatedAt: Timestamp.fromDate(config.updatedAt),
        updatedBy: config.updatedBy,
      });
    } catch (err) {
      throw workerStoreFailure(err, 'write the gateway routing');
    }
  }
}
