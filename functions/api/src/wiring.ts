// The one place the API's concrete adapters are built (Firestore, Pub/Sub, the Google token verifier),
// from a loaded config. main.ts calls it; end-to-end tests may too, or build ApiDeps from their own parts.
import { Firestore } from '@google-cloud/firestore';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { ReconcileRequest } from '../../../shared/src/messages/reconcile-request.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';
import type { ApiDeps } from './app.js';
import { buildAuthenticator } from './auth/config.js';
import type { ApiConfig } from './config.js';

/** shared/topology/pubsub.json: where reconcile requests go. */
export const RECONCILE_TOPIC = 'reconcile-requests';

export const reconcilePublisherOn = (publisher: PubSubPublisher): ReconcilePublisher => ({
  publish: async (request) => {
    await publisher.publish(RECONCILE_TOPIC, ReconcileRequest, request);
  },
});

export interface Wired {
  deps: ApiDeps;
  /** Closes the clients (graceful shutdown). */
  close(): Promise<void>;
}

export function wireApi(config: ApiConfig, log: Logger): Wired {
  const firestore = new Firestore({
    projectId: config.projectId,
    ...(config.firestoreEmulatorHost ? { host: config.firestoreEmulatorHost, ssl: false } : {}),
  });
  const pubsub = createPubSub(config.projectId, config.pubsubEmulatorHost);
  const deps: ApiDeps = {
    version: config.version,
    store: new FirestoreProxyStore(firestore),
    publisher: reconcilePublisherOn(new PubSubPublisher(pubsub)),
    clock: systemClock,
    auth: buildAuthenticator(config.auth),
    log,
    maxBodyBytes: config.maxBodyBytes,
    traceProject: config.onCloudRun ? config.projectId : undefined,
    echo: { trustedHops: config.onCloudRun ? 1 : 0 },
  };
  return {
    deps,
    close: async () => {
      await Promise.allSettled([firestore.terminate(), pubsub.close()]);
    },
  };
}
