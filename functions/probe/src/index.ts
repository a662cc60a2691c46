// Entry point of the probe function (Pub/Sub trigger: ticks-probe). Wiring only: the adapters are
// composed in wiring.ts.
import * as functions from '@google-cloud/functions-framework';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { decodePubSubCloudEvent, logUnknownFields } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { ReceivedTick } from '../../../shared/src/messages/tick.js';
import { loadProbeConfig } from './config.js';
import { handleProbeTick, ProbeJob } from './handler.js';
import { probeDeps } from './wiring.js';

const config = loadProbeConfig();
const log = jsonLogger({ component: 'probe' }, { level: config.LOG_LEVEL });
const deps = probeDeps(config, log);

functions.cloudEvent('probe', async (ce: functions.CloudEvent<unknown>) => {
  const tick = decodePubSubCloudEvent(ce, ReceivedTick);
  if (!tick.ok) {
    // Poison: acknowledged (returning normally) and logged, never retried forever.
    log.error('malformed tick acknowledged', { error: tick.error.kind, messageId: tick.messageId });
    return;
  }
  logUnknownFields(log, tick, 'ticks-probe');
  if (tick.value.job !== ProbeJob) {
    log.warn('tick for another job acknowledged', { job: tick.value.job, messageId: tick.messageId });
    return;
  }
  await handleProbeTick(deps);
});
