// Secret Manager event notifications (https://cloud.google.com/secret-manager/docs/event-notifications):
// the event is in the message ATTRIBUTES (eventType, secretId = the full secret name, versionId = the full
// version name for version events); the data is the Secret or SecretVersion resource as JSON, which the
// plane does not need. TOPIC_CONFIGURED is the test message sent when a secret's topics are set: it has
// no data and no attribute but eventType.
import { z } from 'zod';

export const SecretEventType = z.enum([
  'SECRET_CREATE',
  'SECRET_UPDATE',
  'SECRET_DELETE',
  'SECRET_VERSION_ADD',
  'SECRET_VERSION_ENABLE',
  'SECRET_VERSION_DISABLE',
  'SECRET_VERSION_DESTROY',
  'SECRET_VERSION_DESTROY_SCHEDULED',
  'SECRET_ROTATE',
  'TOPIC_CONFIGURED',
]);
export type SecretEventType = z.infer<typeof SecretEventType>;

/**
 * An event type Secret Manager may add later: read, not refused as poison (the contract's rule for a new
 * enum value: handled, not dropped). What such an event changes cannot be known, so the rotation function
 * treats it as a possible change (`mayChangeResolution`).
 */
const FutureEventType = z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'an upper-case event type');

// On GCP the project segment is the project NUMBER even when the secret was made with the project ID.
const SECRET_NAME = /^projects\/([^/]+)\/secrets\/([A-Za-z0-9_-]{1,255})$/;
const VERSION_NAME = /^projects\/([^/]+)\/secrets\/([A-Za-z0-9_-]{1,255})\/versions\/([1-9][0-9]{0,18})$/;

export const SecretEventAttributes = z.object({
  eventType: z.union([SecretEventType, FutureEventType]),
  secretId: z.string().regex(SECRET_NAME, 'projects/{p}/secrets/{s}'),
  versionId: z.string().regex(VERSION_NAME, 'projects/{p}/secrets/{s}/versions/{n}').optional(),
});
export type SecretEventAttributes = z.infer<typeof SecretEventAttributes>;

export type SecretEvent =
  | { kind: 'topic-configured' }
  | {
      kind: 'event';
      /** One of SecretEventType, or a type Secret Manager added after this code (`isKnownEventType`). */
      eventType: string;
      /** The full secret name, as notified. */
      secretName: string;
      /** The short secret id: what a proxy spec's SecretRef names. */
      secret: string;
      /** The version number a version event is about; null for whole-secret events. */
      version: string | null;
    }
  /** `reason` names what is wrong, never quoting the attribute values. */
  | { kind: 'malformed'; reason: string };

/** Reads a notification from its attributes alone. Never throws: a bad one is `malformed` (poison). */
export function parseSecretEvent(attributes: Record<string, string>): SecretEvent {
  if (attributes.eventType === 'TOPIC_CONFIGURED') return { kind: 'topic-configured' };
  const parsed = SecretEventAttributes.safeParse(attributes);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? 'attributes')))];
    return { kind: 'malformed', reason: `invalid or missing attribute(s): ${fields.join(', ')}` };
  }
  const { eventType, secretId, versionId } = parsed.data;
  const secret = SECRET_NAME.exec(secretId)![2]!;
  let version: string | null = null;
  if (versionId) {
    const v = VERSION_NAME.exec(versionId)!;
    if (`projects/${v[1]}/secrets/${v[2]}` !== secretId) {
      return { kind: 'malformed', reason: 'versionId names a version of another secret than secretId' };
    }
    version = v[3]!;
  }
  return { kind: 'event', eventType, secretName: secretId, secret, version };
}

/**
 * Events after which what a reference resolves to may have changed: a new version (for `latest`, and for a
 * reference pinned to it before it existed), a version enabled, disabled or destroyed (for `latest` and for a reference pinned to it, or the version an instance
 * still serves: a revocation), or the whole secret gone (reconcile then reports the proxy's cloud-init error
 * at once instead of at its next drift poll). A destruction scheduled on a secret with delayed destruction
 * disables the version at once and notifies only SECRET_VERSION_DESTROY_SCHEDULED, so it counts as a
 * disable. SECRET_ROTATE is only Secret Manager's reminder that a rotation is due: nothing changed yet.
 */
export const RotatingEvents: ReadonlySet<SecretEventType> = new Set([
  'SECRET_VERSION_ADD',
  'SECRET_VERSION_ENABLE',
  'SECRET_VERSION_DISABLE',
  'SECRET_VERSION_DESTROY',
  'SECRET_VERSION_DESTROY_SCHEDULED',
  'SECRET_DELETE',
]);

const KNOWN: ReadonlySet<string> = new Set(SecretEventType.options);

export const isKnownEventType = (eventType: string): eventType is SecretEventType => KNOWN.has(eventType);

/**
 * Whether proxies referencing the event's secret are re-enqueued: the rotating events, and a type this
 * code does not know — a pass where nothing changed costs a no-op reconcile, a change missed would keep
 * a revoked or replaced credential in service until the next drift poll.
 */
export const mayChangeResolution = (eventType: string): boolean =>
  !isKnownEventType(eventType) || RotatingEvents.has(eventType);
