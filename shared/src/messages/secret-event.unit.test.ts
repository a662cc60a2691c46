import { describe, expect, it } from 'vitest';
import { isKnownEventType, mayChangeResolution, parseSecretEvent, SecretEventType } from './secret-event.js';

const secretId = 'projects/123456789/secrets/proxy-creds';

describe('parseSecretEvent (Secret Manager notification attributes)', () => {
  it.each<[string, Record<string, string>, ReturnType<typeof parseSecretEvent>]>([
    [
      'a version added (project NUMBER in the name)',
      {
        eventType: 'SECRET_VERSION_ADD',
        secretId,
        versionId: `${secretId}/versions/7`,
        dataFormat: 'JSON_API_V1',
      },
      {
        kind: 'event',
        eventType: 'SECRET_VERSION_ADD',
        secretName: secretId,
        secret: 'proxy-creds',
        version: '7',
      },
    ],
    [
      'a whole-secret event has no version',
      { eventType: 'SECRET_DELETE', secretId, deleteType: 'REQUESTED' },
      {
        kind: 'event',
        eventType: 'SECRET_DELETE',
        secretName: secretId,
        secret: 'proxy-creds',
        version: null,
      },
    ],
    [
      'TOPIC_CONFIGURED carries nothing else',
      { eventType: 'TOPIC_CONFIGURED' },
      { kind: 'topic-configured' },
    ],
    [
      'no attributes at all',
      {},
      { kind: 'malformed', reason: 'invalid or missing attribute(s): eventType, secretId' },
    ],
    [
      'an event type added after this code: read, not poison',
      { eventType: 'SECRET_VERSION_RESTORE', secretId, versionId: `${secretId}/versions/3` },
      {
        kind: 'event',
        eventType: 'SECRET_VERSION_RESTORE',
        secretName: secretId,
        secret: 'proxy-creds',
        version: '3',
      },
    ],
    [
      'an event type that is not one',
      { eventType: 'secret version add; drop', secretId },
      { kind: 'malformed', reason: 'invalid or missing attribute(s): eventType' },
    ],
    [
      'a secretId that is not a secret name',
      { eventType: 'SECRET_VERSION_ADD', secretId: 'proxy-creds' },
      { kind: 'malformed', reason: 'invalid or missing attribute(s): secretId' },
    ],
    [
      'a version name that is not one',
      { eventType: 'SECRET_VERSION_ADD', secretId, versionId: `${secretId}/versions/latest` },
      { kind: 'malformed', reason: 'invalid or missing attribute(s): versionId' },
    ],
    [
      'a version of another secret',
      { eventType: 'SECRET_VERSION_ADD', secretId, versionId: 'projects/123456789/secrets/other/versions/1' },
      { kind: 'malformed', reason: 'versionId names a version of another secret than secretId' },
    ],
  ])('%s', (_n, attributes, expected) => {
    expect(parseSecretEvent(attributes)).toEqual(expected);
  });

  it('never quotes attribute values in its reason', () => {
    const r = parseSecretEvent({ eventType: 'SECRET_VERSION_ADD', secretId: 'hunter2-value' });
    expect(JSON.stringify(r)).not.toContain('hunter2');
  });
});

describe('mayChangeResolution', () => {
  it.each([
    ['SECRET_VERSION_ADD', true],
    ['SECRET_VERSION_DISABLE', true],
    ['SECRET_DELETE', true],
    ['SECRET_UPDATE', false],
    ['SECRET_ROTATE', false],
    ['SECRET_CREATE', false],
    ['SECRET_VERSION_RESTORE', true],
  ])('%s: %s', (eventType, expected) => {
    expect(mayChangeResolution(eventType)).toBe(expected);
  });

  it('knows every type of the schema, and nothing else', () => {
    for (const t of SecretEventType.options) expect(isKnownEventType(t)).toBe(true);
    expect(isKnownEventType('SECRET_VERSION_RESTORE')).toBe(false);
  });
});
