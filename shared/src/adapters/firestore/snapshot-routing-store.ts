// gatewayConfig/routing: the ordered routes every worker's snapshot carries, written by the admin API. A
// document that no longer fits the route schema fails the pass (WorkerStoreError `invalid`) rather than
// silently falling back to the default routing: workers keep their last snapshot until it is fixed.
import { type Firestore, Timestamp } from '@google-cloud/firestore';
import { z } from 'zod';
import { GatewayRoute } from '../../messages/gateway-snapshot.js';
import type { RoutingConfig, RoutingStore } from '../../ports/workers-ownership.js';
import { Collections } from './collections.js';
import { workerStoreFailure } from './worker-errors.js';

export const ROUTING_DOC = 'routing';

const RoutingDoc = z.object({
  routes: z.array(GatewayRoute).max(1000),
  updatedAt: z.instanceof(Timestamp).transform((t) => t.toDate()),
  updatedBy: z.string(),
});

export class FirestoreRoutingStore implements RoutingStore {
  constructor(private readonly db: Firestore) {}

  private ref() {
    return this.db.collection(Collections.gatewayConfig).doc(ROUTING_DOC);
  }

  async get(): Promise<RoutingConfig | null> {
    try {
      const snap = await this.ref().get();
      return snap.exists ? RoutingDoc.parse(snap.data()) : null;
    } catch (err) {
      throw workerStoreFailure(err, 'read the gateway routing');
    }
  }

  async put(config: RoutingConfig): Promise<void> {
    try {
      // JSON round trip: drops undefined optionals, which Firestore refuses.
      await this.ref().set({
        routes: JSON.parse(JSON.stringify(config.routes)),
        updatedAt: Timestamp.fromDate(config.updatedAt),
        updatedBy: config.updatedBy,
      });
    } catch (err) {
      throw workerStoreFailure(err, 'write the gateway routing');
    }
  }
}
