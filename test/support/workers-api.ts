// The API server with the gateway workers' routes over a given Firestore client (a held-up or slowed one,
// test/support), with the stores' call deadline and the request budget a test injects.
import type { Firestore } from '@google-cloud/firestore';
import type { PubSub } from '@google-cloud/pubsub';
import { anyOf } from '../../functions/api/src/auth/authenticator.js';
import { staticTokenAuthenticator } from '../../functions/api/src/auth/static-tokens.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { loadWorkersApiConfig } from '../../functions/api/src/workers/config.js';
import { buildWorkersApi } from '../../functions/api/src/workers/wiring.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import type { WorkerStoreDeadlines } from '../../shared/src/adapters/firestore/worker-deadline.js';
import { type Logger, memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { ADMIN_TOKEN, FAST_SETTINGS, workerToken } from './worker-client.js';

export interface WorkersApiOptions {
  pubsub: PubSub;
  projectId: string;
  storeDeadlines: WorkerStoreDeadlines;
  /** The worker call's budget (unset: the API's own, WORKER_REQUEST_BUDGET_MS). */
  requestBudgetMs?: number;
  log?: Logger;
}

/** Admin auth by ADMIN_TOKEN; the worker gw-1 by its workerToken. */
export function startWorkersApi(firestore: Firestore, o: WorkersApiOptions): Promise<ApiServer> {
  const log = o.log ?? memoryLogger();
  const auth = anyOf([staticTokenAuthenticator([{ name: 'test', token: ADMIN_TOKEN }])]);
  return startApiServer({
    deps: {
      version: 'test',
      store: new FirestoreProxyStore(firestore),
      publisher: new RecordingReconcilePublisher(),
      clock: systemClock,
      auth,
      log,
      workers: buildWorkersApi({
        firestore,
        pubsub: o.pubsub,
        projectId: o.projectId,
        config: loadWorkersApiConfig({ ...FAST_SETTINGS, WORKER_TOKENS: `gw-1:${workerToken('gw-1')}` }),
        adminAuth: auth,
        clock: systemClock,
        log,
        storeDeadlines: o.storeDeadlines,
        ...(o.requestBudgetMs === undefined ? {} : { requestBudgetMs: o.requestBudgetMs }),
      }),
    },
  });
}
