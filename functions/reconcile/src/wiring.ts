// The reconcile function's composition root: the concrete adapters behind ReconcileDeps (seed:
// cmd/main.go). index.ts registers the handler with them; a test fixture may wrap the provider.
import { Firestore } from '@google-cloud/firestore';
import { FirestoreHealthStore } from '../../../shared/src/adapters/firestore/health-store.js';
import { FirestoreProxyStore } from '../../../shared/src/adapters/firestore/proxy-store.js';
import { FirestoreReplacementSlots } from '../../../shared/src/adapters/firestore/replacement-slots.js';
import { makeGceProvider } from '../../../shared/src/adapters/gce/clients.js';
import { jsonLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { withRequestLog } from '../../../shared/src/adapters/provider-requests.js';
import { createPubSub } from '../../../shared/src/adapters/pubsub/client.js';
import { PubSubPublisher } from '../../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { createSecretManagerClient } from '../../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../../shared/src/adapters/secret-manager/reader.js';
import { renderDefaultCloudInit } from '../../../shared/src/domain/cloud-init/startup-script.js';
import { systemClock } from '../../../shared/src/ports/clock.js';
import type { Provider } from '../../../shared/src/ports/provider.js';
import { SecretCloudInitResolver } from './cloud-init.js';
import { type loadReconcileConfig, pollIntervals } from './config.js';
import type { ReconcileDeps } from './handler.js';
import { storeHealthSource } from './health-source.js';

export interface WiringOptions {
  /** Extra fields on every log line (a test fixture names itself). */
  logFields?: Record<string, string>;
  /** Wraps the gce provider (a test fixture injects a crash). */
  wrapProvider?: (provider: Provider) => Provider;
}

export function reconcileDeps(
  config: ReturnType<typeof loadReconcileConfig>,
  opts: WiringOptions = {},
): ReconcileDeps {
  const project = config.GOOGLE_CLOUD_PROJECT;
  const log = jsonLogger(
    { component: 'reconcile', ...opts.logFields },
    {
      level: config.LOG_LEVEL,
      traceProject: project,
    },
  );
  const db = new Firestore({ projectId: project });
  const gce = makeGceProvider({
    project,
    computeEndpoint: config.COMPUTE_EMULATOR_HOST,
    log,
    ...(config.GCE_NETWORK ? { network: config.GCE_NETWORK } : {}),
    ...(config.GCE_SUBNETWORK ? { subnetwork: config.GCE_SUBNETWORK } : {}),
    ...(config.GCE_SERVICE_ACCOUNT ? { serviceAccountEmail: config.GCE_SERVICE_ACCOUNT } : {}),
  });
  const logged = withRequestLog(gce.provider, log);
  const provider = opts.wrapProvider ? opts.wrapProvider(logged) : logged;
  return {
    store: new FirestoreProxyStore(db),
    providers: new Map([[provider.name, provider]]),
    cloudInit: new SecretCloudInitResolver({
      secrets: new SecretManagerSecretReader(
        createSecretManagerClient(config.SECRET_MANAGER_EMULATOR_HOST),
        project,
      ),
      renderDefault: renderDefaultCloudInit,
      clock: systemClock,
      cacheTtlMs: config.RECONCILE_SECRET_CACHE_SECONDS * 1000,
    }),
    health: storeHealthSource(new FirestoreHealthStore(db)),
    publisher: new PubSubReconcilePublisher(
      new PubSubPublisher(createPubSub(project, config.PUBSUB_EMULATOR_HOST)),
    ),
    clock: systemClock,
    intervals: pollIntervals(config),
    slots: new FirestoreReplacementSlots(db, { limit: config.RECONCILE_MAX_REPLACING, clock: systemClock }),
    log,
    maxPasses: config.RECONCILE_MAX_PASSES,
  };
}
