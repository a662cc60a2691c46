// Entry point of the gc function (Pub/Sub trigger: ticks-gc, every 10 minutes deployed). Wiring only.
import { Firestore } from '@google-cloud/firestore';
import * as functions from '@google-cloud/functions-framework';
import { FirestoreJobRunStore } from '../../../shared/src/adapters/firestore/job-run-store.js';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import { makeGceProvider } from '../../../shared/src/adapters/gce/clients.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { withRequestLog } from '../../../shared/src/adapters/provider-requests.js';
import { inDeliveryTrace } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import { loadGcConfig } from './config.js';
import { GC_LIST_BUDGET_MS, GC_RUN_DEADLINE_MS, GC_TIMEOUT_MS, type GcDeps, onGcEvent } from './handler.js';

const config = loadGcConfig();
const log = jsonLogger(
  { component: 'gc' },
  {
    level: config.LOG_LEVEL,
    traceProject: config.GOOGLE_CLOUD_PROJECT,
  },
);
const db = new Firestore({ projectId: config.GOOGLE_CLOUD_PROJECT });
const gce = makeGceProvider({
  project: config.GOOGLE_CLOUD_PROJECT,
  computeEndpoint: config.COMPUTE_EMULATOR_HOST,
  log,
});

const deps: GcDeps = {
  proxies: new FirestoreProxyStore(db),
  // Every provider a proxy can name (reconcile registers the same set): the sweep covers them all.
  providers: new Map([[gce.provider.name, withRequestLog(gce.provider, log)]]),
  jobs: new FirestoreJobRunStore(db),
  clock: systemClock,
  log,
  minAgeMs: config.GC_MIN_AGE_SECONDS * 1000,
  minRunGapMs: config.GC_MIN_RUN_GAP_SECONDS * 1000,
  maxDeletions: config.GC_MAX_DELETIONS_PER_SWEEP,
  runDeadlineMs: GC_RUN_DEADLINE_MS,
  listBudgetMs: GC_LIST_BUDGET_MS,
  timeoutMs: GC_TIMEOUT_MS,
};

functions.cloudEvent('gc', (ce: functions.CloudEvent<unknown>) =>
  inDeliveryTrace(ce, () => onGcEvent(deps, ce)),
);
