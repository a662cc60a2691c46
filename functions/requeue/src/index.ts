// Entry point of the requeue function (Pub/Sub trigger: ticks-requeue, Scheduler job requeue-sweep).
// Wiring only.
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import * as functions from '@google-cloud/functions-framework';
import { FirestoreJobRunStore } from '../../../shared/src/adapters/firestore/job-run-store.js';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { logTickFailure } from '../../../shared/src/adapters/log/tick-failure.js';
import { logTickReceived } from '../../../shared/src/adapters/log/tick-received.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import {
  decodePubSubCloudEvent,
  inDeliveryTrace,
  logUnknownFields,
} from '../../../shared/src/adapters/pubsub/decode-push.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { loadFunctionTable } from '../../../shared/src/config/topology.js';
import { firstHoldMs } from '../../../shared/src/domain/publish-holds.js';
import { ReceivedTick } from '../../../shared/src/messages/tick.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import { pollIntervals } from '../../reconcile/src/config.js';
import { loadRequeueConfig, marginMs, REQUEUE_JOB, steadyRefreshMs, tickPeriodMs } from './config.js';
import { recordedSweep } from './job-run.js';
import { PublishMemory } from './publish-memory.js';
import { SteadyFleet } from './steady-fleet.js';
import { runSweep, type SweepDeps, sweepWindow } from './sweep.js';

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
const runs = new FirestoreJobRunStore(db);
// The deployed timeout, from the table Terraform deploys it from (terraform/modules/tables): the run's
// record is waited for only until shortly before it.
const timeoutMs = (loadFunctionTable().functions.requeue?.timeoutSeconds ?? 120) * 1000;

const deps: SweepDeps = {
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
  inDeliveryTrace(event, () => onTick(event)),
);

async function onTick(event: functions.CloudEvent<unknown>): Promise<void> {
  const tick = decodePubSubCloudEvent(event, ReceivedTick);
  if (!tick.ok) {
    // Poison: acknowledged and logged, never retried forever.
    log.error('malformed tick acknowledged', { error: tick.error.kind, messageId: tick.messageId });
    return;
  }
  logUnknownFields(log, tick, 'ticks-requeue');
  logTickReceived(log, REQUEUE_JOB);
  const stamped = tick.publishTime ? new Date(tick.publishTime) : systemClock.now();
  try {
    const tickAt = Number.isNaN(stamped.getTime()) ? systemClock.now() : stamped;
    const deadline = new Date(sweepWindow(deps, tickAt, systemClock.now()).end);
    // Every delivery of one tick message carries its publish time and id: what tells a duplicate.
    const tickId = tick.publishTime || tick.messageId || null;
    await recordedSweep(
      { runs, clock: systemClock, log, timeoutMs },
      { tick: tickId, deadline },
      (resumeAt) => runSweep(deps, tickAt, resumeAt),
    );
  } catch (err) {
    // The next tick sweeps again; a retried tick would overlap it.
    logTickFailure(log, REQUEUE_JOB, err);
  }
}
