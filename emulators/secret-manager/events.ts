// Secret Manager's Pub/Sub notifications (https://cloud.google.com/secret-manager/docs/event-notifications):
// every notification but TOPIC_CONFIGURED carries eventType, dataFormat=JSON_API_V1, secretId (full secret
// name) and timestamp; version events add versionId (full version name); SECRET_DELETE adds deleteType.
// The data is the Secret or SecretVersion in the proto3 JSON mapping (enums as names).
// TOPIC_CONFIGURED is the test message sent to every topic when a secret's topics are set: no data and no
// attribute but eventType, so consumers must ack messages without data.
import {
  type SecretState,
  secretJson,
  secretPath,
  type VersionState,
  versionJson,
  versionPath,
} from './model.js';

export type EventType =
  | 'SECRET_CREATE'
  | 'SECRET_UPDATE'
  | 'SECRET_DELETE'
  | 'SECRET_VERSION_ADD'
  | 'SECRET_VERSION_ENABLE'
  | 'SECRET_VERSION_DISABLE'
  | 'SECRET_VERSION_DESTROY'
  | 'TOPIC_CONFIGURED';

export interface Notification {
  topics: string[];
  attributes: Record<string, string>;
  /** UTF-8 JSON of the resource; empty for TOPIC_CONFIGURED. */
  data: string;
}

export function secretEvent(type: EventType, secret: SecretState, at: Date): Notification {
  return {
    topics: [...secret.topics],
    attributes: {
      eventType: type,
      dataFormat: 'JSON_API_V1',
      secretId: secretPath(secret),
      timestamp: at.toISOString(),
      ...(type === 'SECRET_DELETE' ? { deleteType: 'REQUESTED' } : {}),
    },
    data: JSON.stringify(secretJson(secret)),
  };
}

export function versionEvent(
  type: EventType,
  secret: SecretState,
  version: VersionState,
  at: Date,
): Notification {
  return {
    topics: [...secret.topics],
    attributes: {
      eventType: type,
      dataFormat: 'JSON_API_V1',
      secretId: secretPath(secret),
      versionId: versionPath(secret, version),
      timestamp: at.toISOString(),
    },
    data: JSON.stringify(versionJson(secret, version, 'string')),
  };
}

export function topicConfigured(secret: SecretState): Notification {
  return { topics: [...secret.topics], attributes: { eventType: 'TOPIC_CONFIGURED' }, data: '' };
}
