// Secret Manager event notifications (https://cloud.google.com/secret-manager/docs/event-notifications):
// the event is in the message attributes; the data is the Secret or SecretVersion resource as JSON.
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

const SecretName = z
  .string()
  .regex(/^projects\/[^/]+\/secrets\/[A-Za-z0-9_-]{1,255}$/, 'projects/{p}/secrets/{s}');

export const SecretEventAttributes = z.object({
  eventType: SecretEventType,
  secretId: SecretName,
  dataFormat: z.string().optional(),
  versionId: z.string().optional(),
});
export type SecretEventAttributes = z.infer<typeof SecretEventAttributes>;

/** The short secret id (what a proxy spec's SecretRef names) of a full resource name. */
export const shortSecretId = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

/** Events after which the value a "latest" reference resolves to may have changed. */
export const RotatingEvents: ReadonlySet<SecretEventType> = new Set([
  'SECRET_VERSION_ADD',
  'SECRET_VERSION_ENABLE',
  'SECRET_VERSION_DISABLE',
  'SECRET_VERSION_DESTROY',
]);
