// Entry point of the requeue function (Pub/Sub trigger: ticks-requeue, Scheduler job requeue-sweep).
// Wiring only: the event is handled in event.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import * as functions from '@google-cloud/functions-framework';
import { FirestoreJobRunStore } from '../../../shared/src/adapters/firestore/job-run-store.js';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { inDeliveryTrace } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { loadFunctionTable } from '../../../shared/src/config/topology.js';
import { firstHoldMs } from '../../../shared/src/domain/publish-holds.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import { pollIntervals } from '../../reconcile/src/config.js';
import { loadRequeueConfig, marginMs, steadyRefreshMs, tickPeriodMs } from './config.js';
import { onRequeueEvent, type RequeueEventDeps } from './event.js';
import { PublishMemory } from './publish-memory.js';
import { SteadyFleet } from './steady-fleet.js';

const config = loadRequeueConfig();
const log = jsonLogger(
  { component: 'requeue' },
  {
    level: config.LOG_LEVEL,
    traceProject: config.GOOGLE_CLOUD_PROJECT,
  },
);
const period = tickPeriodMs(config);
const project = config.GOOGLE_CLOUD_PROJECT;
const db = new Firestore({ projectId: project });
// The deployed timeout, from the table Terraform deploys it from (shared/topology/functions.json): the run's
// record is waited for only until shortly before it.
const timeoutMs = (loadFunctionTable().functions.requeue?.timeoutSeconds ?? 120) * 1000;

const deps: RequeueEventDeps = {
  runs: new FirestoreJobRunStore(db),
  timeoutMs,
  store: new FirestoreProxyStore(db),
  publisher: new PubSubReconcilePublisher(
    new PubSubPublisher(createPubSub(project, config.PUBSUB_EMULATOR_HOST)),
  ),
  clock: systemClock,
  sleep: (ms) => sleep(ms),
  log,
  tickPeriodMs: period,
  marginMs: marginMs(config, period),
  pollMs: Math.min(config.REQUEUE_POLL_MS, period),
  driftPollMs: pollIntervals(config).DriftPoll,
  batch: 500,
  maxBatch: 8_000,
  // A proxy still due this long after it was published is published again: its message was lost (Pub/Sub
  // retries a failing pass by itself, for up to 15 attempts). Shorter, and a push backlog re-feeds itself.
  memory: new PublishMemory(firstHoldMs(period)),
  steady: new SteadyFleet(steadyRefreshMs(period, pollIntervals(config).DriftPoll)),
};

functions.cloudEvent('requeue', (event: functions.CloudEvent<unknown>) =>
  inDeliveryTrace(event, () => onRequeueEvent(deps, event)),
);
