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
import type { WorkerStoreDeadlines } from '../../../../shared/src/adapters/firestore/worker-deadline.js';
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

/**
 * The longest one Firestore call of the worker plane's stores may take before it is given up as
 * WorkerStoreError('unavailable') — the documented 503 unavailable + Retry-After the gateway retries. A
 * Firestore that took a call and never answered held the handler for the client's 300 s per attempt while
 * the gateway gave up at its 10 s (GATEWAY_CONTROL_TIMEOUT_MS) and retried, each retry holding another call
 * (Cloud Run's concurrency of 80 filling up). A stall of one dependency answers 503 within its bound: a
 * Firestore call at 3 s (+ the subscription ensure's 3 s before it, when Pub/Sub stalls too). This bound is
 * per call; a worker call makes several in a row (registration: the subscription ensure 3 s, the worker
 * read and write and the ownership epoch 3 s each; the pass request, 2 s, alongside the epoch read), so
 * each is also cut to what is left of the request's budget, WORKER_REQUEST_BUDGET_MS (8 s, config.ts): a
 * Firestore slow on every call (each just inside 3 s) answers 503 by then, inside the gateway's 10 s
 * (GATEWAY_CONTROL_TIMEOUT_MS). A write given up is an unknown outcome: the stores say how a retry meets
 * one that lands later (shared/src/adapters/firestore/worker-deadline.ts).
 */
export const WORKER_STORE_CALL_DEADLINE_MS = 3_000;

/**
 * The same for an unpaged listing (the workers and snapshot headers in view, the gateway pool, the
 * reclaims), which grows with the fleet: GET /v1/gateway/workers makes two in a row (the workers, then
 * their headers), and answers inside the CLI's 30 s per request.
 */
export const WORKER_STORE_LIST_DEADLINE_MS = 12_000;

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
  /** Replaces the stores' Firestore deadlines (tests); otherwise the two above. */
  storeDeadlines?: WorkerStoreDeadlines;
  /** Replaces the worker calls' budget (tests); otherwise WORKER_REQUEST_BUDGET_MS. */
  requestBudgetMs?: number;
}

export function buildWorkersApi(o: BuildWorkersApiOptions): WorkersApiDeps {
  const { firestore, config } = o;
  const verifier =
    o.verifier ??
    (config.serviceAccounts.length > 0
      ? new GoogleIdTokenVerifier({ audiences: config.audiences, certsUrl: o.certsUrl })
      : null);
  const deadlines = o.storeDeadlines ?? {
    callDeadlineMs: WORKER_STORE_CALL_DEADLINE_MS,
    listDeadlineMs: WORKER_STORE_LIST_DEADLINE_MS,
  };
  const snapshots = new FirestoreSnapshotStore(firestore, deadlines);
  const warning = workerAuthOffWarning(config);
  if (warning) o.log.warn(warning, { auth: 'off' });
  return {
    workers: new FirestoreWorkerStore(firestore, { log: o.log, ...deadlines }),
    ownership: new FirestoreOwnershipStore(firestore, deadlines),
    snapshots,
    names: new SnapshotNames(snapshots),
    pool: new FirestoreGatewayPoolReader(firestore, deadlines),
    routing: new FirestoreRoutingStore(firestore, deadlines),
    reclaims: new FirestoreReclaimStore(firestore, { log: o.log, ...deadlines }),
    // Both bounded well inside the gateway's 10 s control timeout, and cut to the request's budget
    // (workers/config.ts: the worst case).
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
    ...(o.requestBudgetMs === undefined ? {} : { requestBudgetMs: o.requestBudgetMs }),
  };
}
