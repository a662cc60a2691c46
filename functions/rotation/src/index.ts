// Entry point of the rotation function (Pub/Sub trigger: secret-events, where Secret Manager publishes
// its notifications for every proxyplane secret). Wiring only.
import { Firestore } from '@google-cloud/firestore';
import * as functions from '@google-cloud/functions-framework';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { inDeliveryTrace } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { loadBaseConfig } from '../../../shared/src/config/env.js';
import { onSecretEvent, type RotationDeps } from './handler.js';

const config = loadBaseConfig();
const log = jsonLogger(
  { component: 'rotation' },
  {
    level: config.LOG_LEVEL,
    traceProject: config.GOOGLE_CLOUD_PROJECT,
  },
);
const db = new Firestore({ projectId: config.GOOGLE_CLOUD_PROJECT });
const pubsub = new PubSubPublisher(createPubSub(config.GOOGLE_CLOUD_PROJECT, config.PUBSUB_EMULATOR_HOST));

const deps: RotationDeps = {
  proxies: new FirestoreProxyStore(db),
  publisher: new PubSubReconcilePublisher(pubsub),
  log,
};

functions.cloudEvent('rotation', (ce: functions.CloudEvent<unknown>) =>
  inDeliveryTrace(ce, () => onSecretEvent(deps, ce)),
);
