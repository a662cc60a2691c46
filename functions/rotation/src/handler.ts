// Secret rotation: a Secret Manager notification fans out reconcile requests to every proxy whose spec
// references the secret (seed §1 Secret watch). The new version changes what reconcile hashes, so it
// replaces the instance (cloud-init) or rolls its credentials; a duplicate notification only causes a
// no-op pass, because the hash already matches. Secret names in notifications carry the project NUMBER
// on GCP, so matching is by the short secret id; only our secrets notify this topic (Terraform).

import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { proxiesForSecret } from '../../../shared/src/domain/secret-references.js';
import {
  RotatingEvents,
  type SecretEventAttributes,
  shortSecretId,
} from '../../../shared/src/messages/secret-event.js';
import type { ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';

export interface RotationDeps {
  proxies: Pick<ProxyStore, 'list'>;
  publisher: ReconcilePublisher;
  log: Logger;
}

export async function handleSecretEvent(deps: RotationDeps, event: SecretEventAttributes): Promise<string[]> {
  if (!RotatingEvents.has(event.eventType)) {
    deps.log.info('secret event ignored', { eventType: event.eventType, secret: event.secretId });
    return [];
  }
  const secret = shortSecretId(event.secretId);
  const names = proxiesForSecret(await deps.proxies.list(), secret);
  await Promise.all(names.map((proxy) => deps.publisher.publish({ proxy, reason: 'secret-rotated' })));
  deps.log.info('secret rotated', {
    secret,
    eventType: event.eventType,
    proxies: names,
    count: names.length,
  });
  return names;
}
