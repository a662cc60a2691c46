// Entry point of the probe function (Pub/Sub trigger: ticks-probe). Wiring only: the adapters are
// composed in wiring.ts, the event is handled in event.ts.
import * as functions from '@google-cloud/functions-framework';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { inDeliveryTrace } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { loadProbeConfig } from './config.js';
import { onProbeEvent } from './event.js';
import { probeDeps } from './wiring.js';

const config = loadProbeConfig();
const log = jsonLogger(
  { component: 'probe' },
  {
    level: config.LOG_LEVEL,
    traceProject: config.GOOGLE_CLOUD_PROJECT,
  },
);
const deps = probeDeps(config, log);

functions.cloudEvent('probe', (ce: functions.CloudEvent<unknown>) =>
  inDeliveryTrace(ce, () => onProbeEvent(deps, log, ce)),
);
