// The admin API in-process over a test plane: open auth, real store, reconcile requests published on the
// plane's Pub/Sub — what the lifecycle, GC-crash and rotation tests drive proxies through.
import { openAuthenticator } from '../../functions/api/src/auth/authenticator.js';
import { type ApiServer, startApiServer } from '../../functions/api/src/server.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import type { PubSubPublisher } from '../../shared/src/adapters/pubsub/publisher.js';
import { PubSubReconcilePublisher } from '../../shared/src/adapters/pubsub/reconcile-publisher.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import type { ProxyStore } from '../../shared/src/ports/proxy-store.js';

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
