// Secret rotation: a Secret Manager notification fans out reconcile requests to every proxy whose spec
// references the secret, or whose VM still serves a version of it (seed §1 Secret watch). The new version changes what reconcile hashes, so it
// replaces the instance (cloud-init) or rolls its credentials; a duplicate notification only causes a
// no-op pass, because the hash already matches. Notifications name secrets with the project NUMBER on
// GCP, so matching is by the short secret id; only our secrets notify this topic (Terraform).
//
// Outcomes as the style guide maps them: a notification that cannot be read, one for a secret no proxy
// references, and TOPIC_CONFIGURED are acknowledged and logged; a Firestore or Pub/Sub failure throws, so
// Pub/Sub redelivers (re-publishing to proxies already enqueued is harmless). A publish left unconfirmed
// is such a failure too: the library may still send it, but not from a function whose CPU is throttled
// once it has answered, and nothing else re-derives a `secret-rotated` request (it is what takes a Failed
// proxy past its latch). A redelivery re-publishes the whole fan-out: up to ten copies a proxy in a
// Pub/Sub brownout, each a pass that finds its hash current.

import { z } from 'zod';
import type { Logger } from '../../../shared/src/adapters/log/json-logger.js';
import { loggedProxies } from '../../../shared/src/adapters/log/logged-proxies.js';
import { decodePubSubCloudEvent } from '../../../shared/src/adapters/pubsub/decode-push.js';
import { proxiesForSecretChange, type SecretChange } from '../../../shared/src/domain/secret-references.js';
import {
  isKnownEventType,
  mayChangeResolution,
  parseSecretEvent,
  type SecretEvent,
} from '../../../shared/src/messages/secret-event.js';
import type { ProxyStore } from '../../../shared/src/ports/proxy-store.js';
import { mayStillBeSent } from '../../../shared/src/ports/publish-error.js';
import type { ReconcilePublisher } from '../../../shared/src/ports/reconcile-publisher.js';

export interface RotationDeps {
  proxies: Pick<ProxyStore, 'listPage'>;
  publisher: ReconcilePublisher;
  log: Logger;
  /** Documents read at a time (PAGE_SIZE unless a test sets it). */
  pageSize?: number;
}

export type RotationOutcome =
  | { kind: 'topic-configured' | 'malformed' | 'ignored' }
  | { kind: 'fanned-out'; proxies: string[] };

/** Names logged per notification at most; the count is always complete. */
const LOGGED_NAMES = 100;

/**
 * Proxy documents held at a time. The function reads the whole collection a page at a time and keeps
 * only the names that match, so its 256 MiB hold one page of full documents whatever the fleet's size.
 */
export const PAGE_SIZE = 500;

/** The data is the Secret or SecretVersion resource; only the attributes are needed, so anything goes. */
const AnyJson = z.unknown();

export async function onSecretEvent(deps: RotationDeps, ce: unknown): Promise<RotationOutcome> {
  const decoded = decodePubSubCloudEvent(ce, AnyJson);
  const event = parseSecretEvent(decoded.attributes);
  const messageId = decoded.messageId;
  if (event.kind === 'topic-configured') {
    deps.log.info('secret notification topic configured (test message) acknowledged', { messageId });
    return { kind: 'topic-configured' };
  }
  if (event.kind === 'malformed') {
    // Poison: acknowledged (returning normally) and logged with attribute NAMES only, never values.
    deps.log.error('malformed secret notification acknowledged', {
      reason: event.reason,
      messageId,
      attributeNames: Object.keys(decoded.attributes).sort(),
    });
    return { kind: 'malformed' };
  }
  return handleSecretEvent(deps, event, messageId);
}

export async function handleSecretEvent(
  deps: RotationDeps,
  event: Extract<SecretEvent, { kind: 'event' }>,
  messageId?: string,
): Promise<RotationOutcome> {
  const fields = { secret: event.secret, version: event.version, eventType: event.eventType, messageId };
  if (!mayChangeResolution(event.eventType)) {
    deps.log.info('secret event ignored: no reference resolves differently after it', fields);
    return { kind: 'ignored' };
  }
  if (!isKnownEventType(event.eventType)) {
    // Secret Manager added a type after this code: handled as a possible change, said once per event.
    deps.log.warn('secret event of a type this version does not know: treated as a possible change', {
      ...fields,
      event: 'rotation.unknown_event_type',
    });
  }
  const { names, skipped } = await referencingProxies(deps, { secret: event.secret, version: event.version });
  if (skipped.length > 0) {
    // Whether they reference the secret cannot be told, and reconcile could not act on them anyway.
    deps.log.warn('secret event: proxy documents that do not fit the model were not considered', {
      ...fields,
      event: 'rotation.invalid_documents_skipped',
      count: skipped.length,
      skipped: skipped.slice(0, LOGGED_NAMES),
    });
  }
  if (names.length === 0) {
    deps.log.info('secret event for a secret no proxy references (at that version): acknowledged', fields);
    return { kind: 'fanned-out', proxies: [] };
  }
  await publishAll(deps, names, fields);
  deps.log.info('secret changed: referencing proxies re-enqueued', {
    ...fields,
    ...loggedProxies(names, LOGGED_NAMES),
  });
  return { kind: 'fanned-out', proxies: names };
}

/**
 * Publishes a request per proxy, every one attempted. Throws the first failure, definite (not sent) or
 * unconfirmed: those proxies need the redelivery. Unlike the requeue sweep, which holds an unconfirmed
 * publish as sent because its next tick re-derives the work from Firestore, nothing re-derives this one.
 */
async function publishAll(
  deps: RotationDeps,
  names: readonly string[],
  fields: Record<string, unknown>,
): Promise<void> {
  const results = await Promise.allSettled(
    names.map((proxy) => deps.publisher.publish({ proxy, reason: 'secret-rotated' })),
  );
  const rejected = results.flatMap((r, i) =>
    r.status === 'rejected' ? [{ proxy: names[i]!, reason: r.reason as unknown }] : [],
  );
  const unconfirmed = rejected.filter((f) => mayStillBeSent(f.reason)).map((f) => f.proxy);
  if (unconfirmed.length > 0) {
    deps.log.warn('secret event: reconcile requests unconfirmed; the notification is redelivered', {
      ...fields,
      event: 'rotation.publish_unconfirmed',
      ...loggedProxies(unconfirmed, LOGGED_NAMES),
    });
  }
  const first = rejected.find((f) => !mayStillBeSent(f.reason)) ?? rejected[0];
  if (first) throw first.reason;
}

/** The names of the proxies the change moves, and of the documents that do not fit the model: page by page. */
async function referencingProxies(
  deps: RotationDeps,
  change: SecretChange,
): Promise<{ names: string[]; skipped: string[] }> {
  const names: string[] = [];
  const skipped: string[] = [];
  let after: string | null = null;
  do {
    const page = await deps.proxies.listPage({}, { after, size: deps.pageSize ?? PAGE_SIZE });
    names.push(...proxiesForSecretChange(page.proxies, change));
    skipped.push(...page.skipped.map((p) => p.name));
    after = page.next;
  } while (after !== null);
  return { names, skipped };
}
