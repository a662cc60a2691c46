// The gateway admin routes (/v1/gateway, functions/api/src/workers/admin-routes.ts) over the Firestore
// emulator, without the API process: every store on `db`, open auth, a manual clock, and the snapshot
// passes they ask for recorded in `passes`. `reads` (optional) is the client the workers and snapshot
// headers are read through, e.g. one that records what Firestore was asked for.
import type { Firestore } from '@google-cloud/firestore';
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { gatewayAdminRoutes } from '../../functions/api/src/workers/admin-routes.js';
import { FirestoreReclaimStore } from '../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreOwnershipStore } from '../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreGatewayPoolReader } from '../../shared/src/adapters/firestore/snapshot-pool-reader.js';
import { FirestoreRoutingStore } from '../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore } from '../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import type { ReclaimStore, RoutingStore } from '../../shared/src/ports/workers-ownership.js';

export function gatewayAdminApp(
  db: Firestore,
  opts: {
    now: Date;
    reads?: Firestore;
    /** In place of the stores on `db`, e.g. one whose write lands and then fails. */
    routing?: RoutingStore;
    reclaims?: ReclaimStore;
  },
) {
  const passes: string[] = [];
  const reads = opts.reads ?? db;
  const app = gatewayAdminRoutes({
    proxies: new FirestoreProxyStore(db),
    auth: openAuthenticator(),
    workers: new FirestoreWorkerStore(reads),
    ownership: new FirestoreOwnershipStore(db),
    snapshots: new FirestoreSnapshotStore(reads),
    pool: new FirestoreGatewayPoolReader(db),
    routing: opts.routing ?? new FirestoreRoutingStore(db),
    reclaims: opts.reclaims ?? new FirestoreReclaimStore(db),
    requester: {
      request: async (r) => {
        passes.push(r.reason);
      },
    },
    clock: new ManualClock(opts.now),
    log: memoryLogger(),
    settings: DEFAULT_WORKER_SETTINGS, // view horizon 1 h
  });
  /** A request to the routes (a JSON body when given), answered with its status. */
  const send = async (method: string, path: string, body?: unknown) =>
    (
      await app.request(path, {
        method,
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      })
    ).status;
  return { app, passes, send };
}
