// The probe function's event: decode the tick (poison and another job's tick are acknowledged and logged),
// then run it (handler.ts). A tick that throws logs one ERROR line (`job.tick_failed`) and throws on, so
// the function answers 500 and Pub/Sub redelivers; the claim makes a redelivery within half a period a
// no-op.
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { loggedTick } from '../../../shared/src/adapters/log/tick-failure.js';
import { logTickReceived } from '../../../shared/src/adapters/log/tick-received.js';
import {
  decodePubSubCloudEvent,
  logUnknownFields,
  poisonFields,
} from '../../../shared/src/adapters/pubsub/decode-push.js';
import { ReceivedTick } from '../../../shared/src/messages/tick.js';
import { handleProbeTick, type ProbeHandlerDeps, ProbeJob } from './handler.js';

export async function onProbeEvent(deps: ProbeHandlerDeps, log: Logger, ce: unknown): Promise<void> {
  const tick = decodePubSubCloudEvent(ce, ReceivedTick);
  if (!tick.ok) {
    // Poison: acknowledged (returning normally) and logged, never retried forever.
    log.error('malformed tick acknowledged', poisonFields(tick));
    return;
  }
  logUnknownFields(log, tick, 'ticks-probe');
  if (tick.value.job !== ProbeJob) {
    log.warn('tick for another job acknowledged', { job: tick.value.job, messageId: tick.messageId });
    return;
  }
  logTickReceived(log, ProbeJob);
  await loggedTick(log, ProbeJob, () => handleProbeTick(deps));
}
