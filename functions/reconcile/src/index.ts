// Entry point of the reconcile function (Pub/Sub trigger: reconcile-requests). Wiring only: the adapters
// are composed in wiring.ts.
import * as functions from '@google-cloud/functions-framework';
import { inDeliveryTrace } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { loadReconcileConfig } from './config.js';
import { onReconcileEvent } from './handler.js';
import { reconcileDeps } from './wiring.js';

const deps = reconcileDeps(loadReconcileConfig());

functions.cloudEvent('reconcile', (event: functions.CloudEvent<unknown>) =>
  inDeliveryTrace(event, () => onReconcileEvent(deps, event)),
);
