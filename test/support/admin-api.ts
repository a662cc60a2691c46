// The API in-process over a test plane: the open admin API the lifecycle, GC-crash and rotation tests drive
// proxies through, and the deps with the gateway workers' endpoints.
import type { Firestore } from '@google-cloud/firestore';
import type { ApiDeps } from '../../functions/api/src/app.js';
import { anyOf, openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { staticTokenAuthenticator } from '../../functions/api/src/auth/static-tokens.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { loadWorkersApiConfig } from '../../functions/api/src/workers/config.js';
import { buildWorkersApi } from '../../functions/api/src/workers/wiring.js';
import { jsonLogger, memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { PubSubPublisher } from '../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import type { ProxyStore } from '../../shared/src/ports/proxy-store.js';
import type { TestPlane } from './local-plane.js';

export function startOpenAdminApi(
  plane: { publisher: PubSubPublisher },
  store: ProxyStore,
): Promise<ApiServer> {
  return startApiServer({
    deps: {
      version: 'test',
      store,
      publisher: new PubSubReconcilePublisher(plane.publisher),
      clock: systemClock,
      auth: openAuthenticator(),
      log: memoryLogger(),
    },
  });
}

/**
 * The API's deps with the gateway workers' endpoints, as the worker-contract tests and the gateway end to
 * end run it: static admin token, worker tokens per worker id, snapshot requests on the plane's Pub/Sub.
 */
export function workersApiDeps(o: {
  plane: Pick<TestPlane, 'publisher' | 'pubsub'>;
  projectId: string;
  firestore: Firestore;
  store: ProxyStore;
  env: Record<string, string>;
  adminToken: string;
  workerTokens: Array<{ workerId: string; token: string }>;
}): ApiDeps {
  const log = jsonLogger({ component: 'api-under-test' }, { level: 'error' });
  const auth = anyOf([staticTokenAuthenticator([{ name: 'test', token: o.adminToken }])]);
  const config = loadWorkersApiConfig({
    ...o.env,
    WORKER_TOKENS: o.workerTokens.map((w) => `${w.workerId}:${w.token}`).join(','),
  });
  return {
    version: 'test',
    store: o.store,
    publisher: new PubSubReconcilePublisher(o.plane.publisher),
    clock: systemClock,
    auth,
    log,
    workers: buildWorkersApi({
      firestore: o.firestore,
      pubsub: o.plane.pubsub,
      projectId: o.projectId,
      config,
      adminAuth: auth,
      clock: systemClock,
      log,
    }),
  };
}

/** One JSON call to an API at `base` (the open admin API: no credentials), its answer read whole. */
export async function jsonCall(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : null };
}
