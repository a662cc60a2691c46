// Entry point of the snapshot function (Pub/Sub trigger: snapshot-requests; Scheduler job snapshot-tick).
// Wiring only.
import { randomUUID } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import * as functions from '@google-cloud/functions-framework';
import { FirestoreJobRunStore } from '../../../shared/src/adapters/firestore/job-run-store.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { decodePubSubCloudEvent, inDeliveryTrace } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubSnapshotPublisher } from '../../../shared/src/adapters/pubsub/snapshot-publisher.js';
import { PubSubSnapshotRequester } from '../../../shared/src/adapters/pubsub/snapshot-requester.js';
import { PubSubSubscriptionReaper } from '../../../shared/src/adapters/pubsub/subscription-reaper.js';
import { sha256Hex } from '../../../shared/src/messages/gateway-snapshot.js';
import { ReceivedTick } from '../../../shared/src/messages/tick.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import { recordRun } from '../../../shared/src/ports/job-runs.js';
import { loadSnapshotConfig } from './config.js';
import { firestoreStores } from './firestore-stores.js';
import { handleSnapshotEvent, type SnapshotHandlerDeps } from './handler.js';
import { SnapshotJob, snapshotRunResult } from './job-run.js';
import { tickRecording } from './tick-recording.js';

const config = loadSnapshotConfig();
const log = jsonLogger(
  { component: 'snapshot' },
  {
    level: config.logLevel,
    traceProject: config.projectId,
  },
);
const db = new Firestore({ projectId: config.projectId });

const pubsub = createPubSub(config.projectId, config.pubsubEmulatorHost);
const deps: SnapshotHandlerDeps = {
  ...firestoreStores(db, log),
  publisher: new PubSubSnapshotPublisher(pubsub),
  // Bounded by the publisher's default deadline: a Pub/Sub outage must not hold the tick until its timeout
  // (the library retries a publish for up to 10 minutes); the next tick asks again.
  requester: new PubSubSnapshotRequester(new PubSubPublisher(pubsub)),
  subscriptions: new PubSubSubscriptionReaper(pubsub),
  clock: systemClock,
  log,
  settings: config.settings,
  sha256: sha256Hex,
  lockMs: config.lockMs,
  lockHoldMs: config.lockHoldMs,
  sweep: config.sweep,
  retention: config.retention,
  newHolder: randomUUID,
};

// The deployed timeout, from the table Terraform deploys it from (shared/topology/functions.json): the
// run's record is waited for only until shortly before it, its claim for CLAIM_TIMEOUT_MS (tick-recording.ts).
const recording = tickRecording({
  runs: new FirestoreJobRunStore(db),
  clock: systemClock,
  log,
  timeoutMs: config.timeoutMs,
});

functions.cloudEvent('snapshot', (event: functions.CloudEvent<unknown>) =>
  inDeliveryTrace(event, () => onDelivery(event)),
);

async function onDelivery(event: functions.CloudEvent<unknown>): Promise<void> {
  // Scheduler ticks are runs of the snapshot-tick job (issue 11); worker requests are not. Read as the
  // handler reads them (which logs any field dropped: once per delivery, there).
  const tick = decodePubSubCloudEvent(event, ReceivedTick);
  if (!tick.ok || tick.value.job !== SnapshotJob) {
    await handleSnapshotEvent(deps, event);
    return;
  }
  await recordRun(recording, SnapshotJob, () => handleSnapshotEvent(deps, event), snapshotRunResult);
}
