// Builds the worker endpoints' adapters — the one place they are constructed, from the API's Firestore and
// Pub/Sub clients and its loaded config. The API's composition root calls it and mounts workersApi(deps).
import { randomUUID } from 'node:crypto';
import type { Firestore } from '@google-cloud/firestore';
import type { PubSub } from '@google-cloud/pubsub';
import { FirestoreReclaimStore } from '../../../../shared/src/adapters/firestore/ownership-reclaim-store.js';
import { FirestoreOwnershipStore } from '../../../../shared/src/adapters/firestore/ownership-store.js';
import { FirestoreGatewayPoolReader } from '../../../../shared/src/adapters/firestore/snapshot-pool-reader.js';
import { FirestoreRoutingStore } from '../../../../shared/src/adapters/firestore/snapshot-routing-store.js';
import { FirestoreSnapshotStore } from '../../../../shared/src/adapters/firestore/snapshot-store.js';
import { FirestoreWorkerStore } from '../../../../shared/src/adapters/firestore/worker-store.js';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { PubSubPublisher } from '../../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubSnapshotRequester } from '../../../../shared/src/adapters/pubsub/snapshot-requester.js';
import { PubSubWorkerSubscriptions } from '../../../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';
import type { Authenticator } from '../auth/authenticator.js';
import { GoogleIdTokenVerifier, type IdTokenVerifier } from '../auth/id-token-verifier.js';
import { workerAuthenticator } from './auth.js';
import {
  WORKER_PUBLISH_DEADLINE_MS,
  WORKER_SUBSCRIPTION_DEADLINE_MS,
  type WorkersApiConfig,
  workerAuthOffWarning,
} from './config.js';
import type { WorkersApiDeps } from './index.js';
import { RateLimiter } from './rate-limit.js';
import { SnapshotNames } from './snapshot-names.js';

export interface BuildWorkersApiOptions {
  firestore: Firestore;
  pubsub: PubSub;
  projectId: string;
  config: WorkersApiConfig;
  adminAuth: Authenticator;
  clock: Clock;
  log: Logger;
  /** Replaces the Google verifier (tests); otherwise one for config.audiences when service accounts are set. */
  verifier?: IdTokenVerifier;
  certsUrl?: string;
}

export function buildWorkersApi(o: BuildWorkersApiOptions): WorkersApiDeps {
  const { firestore, config } = o;
  const verifier =
    o.verifier ??
    (config.serviceAccounts.length > 0
      ? new GoogleIdTokenVerifier({ audiences: config.audiences, certsUrl: o.certsUrl })
      : null);
  const snapshots = new FirestoreSnapshotStore(firestore);
  const warning = workerAuthOffWarning(config);
  if (warning) o.log.warn(warning, { auth: 'off' });
  return {
    workers: new FirestoreWorkerStore(firestore, { log: o.log }),
    ownership: new FirestoreOwnershipStore(firestore),
    snapshots,
    names: new SnapshotNames(snapshots),
    pool: new FirestoreGatewayPoolReader(firestore),
    routing: new FirestoreRoutingStore(firestore),
    reclaims: new FirestoreReclaimStore(firestore, { log: o.log }),
    // Both bounded well inside the gateway's 10 s control timeout (workers/config.ts: the worst case).
    subscriptions: new PubSubWorkerSubscriptions(o.pubsub, o.projectId, undefined, {
      deadlineMs: WORKER_SUBSCRIPTION_DEADLINE_MS,
    }),
    requester: new PubSubSnapshotRequester(
      new PubSubPublisher(o.pubsub, { deadlineMs: WORKER_PUBLISH_DEADLINE_MS }),
    ),
    auth: workerAuthenticator({
      tokens: config.tokens,
      serviceAccounts: config.serviceAccounts,
      verifier,
      open: config.open,
    }),
    adminAuth: o.adminAuth,
    limiter: new RateLimiter(() => performance.now()),
    clock: o.clock,
    log: o.log,
    settings: config.settings,
    newSessionId: randomUUID,
  };
}
