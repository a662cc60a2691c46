import { beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../../shared/src/adapters/log/json-logger.js';
import { PublishError } from '../../../shared/src/ports/publish-error.js';
import { InMemoryProxyStore } from '../../../shared/src/testing/in-memory-proxy-store.js';
import { aProxy, externalSpec, managedSpec } from '../../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../../shared/src/testing/recording-publisher.js';
import { onSecretEvent, type RotationDeps } from './handler.js';

const secretName = (s: string) => `projects/987654321/secrets/${s}`;

/** The messagePublished CloudEvent the framework hands a Pub/Sub-triggered function. */
const cloudEvent = (attributes: Record<string, string>, data: unknown = { name: 'whatever' }) => ({
  specversion: '1.0',
  type: 'google.cloud.pubsub.topic.v1.messagePublished',
  data: {
    message: {
      messageId: '42',
      attributes,
      ...(data === undefined ? {} : { data: Buffer.from(JSON.stringify(data)).toString('base64') }),
    },
  },
});
const versionAdded = (secret: string, version = '2') =>
  cloudEvent({
    eventType: 'SECRET_VERSION_ADD',
    secretId: secretName(secret),
    versionId: `${secretName(secret)}/versions/${version}`,
    dataFormat: 'JSON_API_V1',
  });

describe('onSecretEvent (seed §1 Secret watch)', () => {
  let deps: RotationDeps & { log: ReturnType<typeof memoryLogger> };
  let publisher: RecordingReconcilePublisher;
  let store: InMemoryProxyStore;

  beforeEach(async () => {
    store = new InMemoryProxyStore();
    publisher = new RecordingReconcilePublisher();
    deps = { proxies: store, publisher, log: memoryLogger() };
    await store.create(aProxy({ name: 'creds', spec: managedSpec({ credentialsRef: { secret: 'rot' } }) }));
    await store.create(
      aProxy({ name: 'init', spec: managedSpec({ cloudInit: { secretRef: { secret: 'rot' } } }) }),
    );
    await store.create(aProxy({ name: 'ext', spec: externalSpec({ credentialsRef: { secret: 'rot' } }) }));
    await store.create(
      aProxy({ name: 'pinned', spec: managedSpec({ credentialsRef: { secret: 'rot', version: '1' } }) }),
    );
    await store.create(aProxy({ name: 'other', spec: managedSpec({ credentialsRef: { secret: 'else' } }) }));
    await store.create(
      aProxy({
        name: 'going',
        spec: managedSpec({ credentialsRef: { secret: 'rot' } }),
        deletionRequestedAt: new Date(0),
      }),
    );
  });

  it('re-enqueues every proxy a new version moves, once each, and no other', async () => {
    const outcome = await onSecretEvent(deps, versionAdded('rot'));
    expect(outcome).toEqual({ kind: 'fanned-out', proxies: ['creds', 'ext', 'init'] });
    expect(publisher.published).toEqual([
      { proxy: 'creds', reason: 'secret-rotated' },
      { proxy: 'ext', reason: 'secret-rotated' },
      { proxy: 'init', reason: 'secret-rotated' },
    ]);
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        message: 'secret changed: referencing proxies re-enqueued',
        secret: 'rot',
        count: 3,
      }),
    );
  });

  it('re-enqueues a reference pinned to the version just added: it could not be read before', async () => {
    // A proxy pinned to version 1 before that version existed waits out a CloudInitError backoff (up to
    // 10 min) unless the version's arrival enqueues it.
    expect(await onSecretEvent(deps, versionAdded('rot', '1'))).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init', 'pinned'],
    });
  });

  it('re-enqueues a pinned reference when its own version is disabled', async () => {
    const ev = cloudEvent({
      eventType: 'SECRET_VERSION_DISABLE',
      secretId: secretName('rot'),
      versionId: `${secretName('rot')}/versions/1`,
    });
    expect(await onSecretEvent(deps, ev)).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init', 'pinned'],
    });
  });

  it('re-enqueues the proxies still serving a version whose destruction was scheduled: that disables it at once', async () => {
    // A secret with delayed destruction: `gcloud secrets versions destroy 3` disables version 3 now and
    // notifies SECRET_VERSION_DESTROY_SCHEDULED only (no SECRET_VERSION_DISABLE). A proxy whose spec moved
    // to another secret still serves version 3 until its turn: that is a revocation (managed.ts keepsAccess).
    await store.create(aProxy({ name: 'moved', spec: managedSpec({ credentialsRef: { secret: 'new' } }) }));
    const read = (await store.get('moved'))!;
    const serving = { ...read.proxy.status, servedCredentials: { secret: 'rot', version: '3' } };
    expect(await store.writeStatus('moved', serving, read.version)).toBe('written');
    const ev = cloudEvent({
      eventType: 'SECRET_VERSION_DESTROY_SCHEDULED',
      secretId: secretName('rot'),
      versionId: `${secretName('rot')}/versions/3`,
    });
    expect(await onSecretEvent(deps, ev)).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init', 'moved'],
    });
  });

  // Every event after which a reference may resolve differently (seed §1: a Secret updated or deleted),
  // pinned references included when the event is about their version or the whole secret.
  it.each([
    ['a version enabled', 'SECRET_VERSION_ENABLE', '1'],
    ['a version destroyed', 'SECRET_VERSION_DESTROY', '1'],
    ['the whole secret deleted', 'SECRET_DELETE', null],
  ])('re-enqueues every proxy that references the secret when %s', async (_n, eventType, version) => {
    const ev = cloudEvent({
      eventType,
      secretId: secretName('rot'),
      ...(version ? { versionId: `${secretName('rot')}/versions/${version}` } : {}),
    });
    expect(await onSecretEvent(deps, ev)).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init', 'pinned'],
    });
    expect(publisher.published.map((r) => r.reason)).toEqual(Array(4).fill('secret-rotated'));
  });

  it.each([
    ['SECRET_CREATE', 'a secret without versions resolves nothing yet'],
    ['SECRET_UPDATE', 'labels, topics, rotation settings: no version moves'],
    ['SECRET_ROTATE', 'only the reminder that a rotation is due'],
  ])('acknowledges %s without re-enqueueing anything (%s)', async (eventType) => {
    expect(await onSecretEvent(deps, cloudEvent({ eventType, secretId: secretName('rot') }))).toEqual({
      kind: 'ignored',
    });
    expect(publisher.published).toEqual([]);
  });

  it('acknowledges and logs a notification for a secret no proxy references', async () => {
    expect(await onSecretEvent(deps, versionAdded('unknown-secret'))).toEqual({
      kind: 'fanned-out',
      proxies: [],
    });
    expect(publisher.published).toEqual([]);
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'INFO',
        message: 'secret event for a secret no proxy references (at that version): acknowledged',
        secret: 'unknown-secret',
      }),
    );
  });

  it.each([
    ['no attributes', cloudEvent({})],
    ['an event type that is not one', cloudEvent({ eventType: 'nope!', secretId: secretName('rot') })],
    ['a bare secret id', cloudEvent({ eventType: 'SECRET_VERSION_ADD', secretId: 'rot' })],
    ['not a Pub/Sub event at all', { hello: 'world' }],
    ['null', null],
  ])('acknowledges and logs a malformed notification (%s)', async (_n, ev) => {
    expect(await onSecretEvent(deps, ev)).toEqual({ kind: 'malformed' });
    expect(publisher.published).toEqual([]);
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({ severity: 'ERROR', message: 'malformed secret notification acknowledged' }),
    );
  });

  it('re-enqueues on an event type Secret Manager added after this code, as a possible change, and says so', async () => {
    const event = cloudEvent({
      eventType: 'SECRET_VERSION_RESTORE',
      secretId: secretName('rot'),
      versionId: `${secretName('rot')}/versions/1`,
    });
    // Every `latest` reference and the one pinned to version 1; not the proxy being deleted, not another secret's.
    expect(await onSecretEvent(deps, event)).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init', 'pinned'],
    });
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        event: 'rotation.unknown_event_type',
        eventType: 'SECRET_VERSION_RESTORE',
      }),
    );
    expect(deps.log.lines.some((l) => l.severity === 'ERROR')).toBe(false);
  });

  it('logs attribute names, never their values', async () => {
    await onSecretEvent(deps, cloudEvent({ eventType: 'SECRET_VERSION_ADD', secretId: 'user:S3cr3t-value' }));
    const line = deps.log.lines.find((l) => l.message === 'malformed secret notification acknowledged');
    expect(line?.attributeNames).toEqual(['eventType', 'secretId']);
    expect(JSON.stringify(deps.log.lines)).not.toContain('S3cr3t');
  });

  it('acknowledges TOPIC_CONFIGURED, which has no data and arrives as the raw push body', async () => {
    const raw = {
      subscription: 'projects/p/subscriptions/s',
      message: { attributes: { eventType: 'TOPIC_CONFIGURED' } },
    };
    expect(await onSecretEvent(deps, raw)).toEqual({ kind: 'topic-configured' });
    expect(publisher.published).toEqual([]);
  });

  it.each(['SECRET_CREATE', 'SECRET_UPDATE', 'SECRET_ROTATE'])(
    'ignores %s: no reference resolves differently',
    async (eventType) => {
      expect(await onSecretEvent(deps, cloudEvent({ eventType, secretId: secretName('rot') }))).toEqual({
        kind: 'ignored',
      });
      expect(publisher.published).toEqual([]);
    },
  );

  it('throws when publishing fails, so that Pub/Sub redelivers', async () => {
    publisher.failNext(new Error('pubsub unavailable'));
    await expect(onSecretEvent(deps, versionAdded('rot'))).rejects.toThrow('pubsub unavailable');
  });

  it('throws on an unconfirmed publish, having tried every proxy: nothing else re-derives the request', async () => {
    // The library may still send it, but not from a function whose CPU is throttled once it has answered;
    // and a `secret-rotated` request is the one that takes a Failed proxy past its latch.
    const unconfirmedFor = new Set(['ext']);
    const publish = publisher.publish.bind(publisher);
    publisher.publish = async (request) => {
      if (unconfirmedFor.has(request.proxy)) throw new PublishError('unconfirmed', 'no confirmation in 10 s');
      return publish(request);
    };
    await expect(onSecretEvent(deps, versionAdded('rot'))).rejects.toThrow('no confirmation in 10 s');
    expect(publisher.published.map((r) => r.proxy)).toEqual(['creds', 'init']);
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        event: 'rotation.publish_unconfirmed',
        count: 1,
        proxies: ['ext'],
      }),
    );
  });

  it('still throws when a publish definitely failed beside an unconfirmed one, having tried every proxy', async () => {
    const publish = publisher.publish.bind(publisher);
    publisher.publish = async (request) => {
      if (request.proxy === 'creds') throw new PublishError('unconfirmed', 'no confirmation in 10 s');
      if (request.proxy === 'ext') throw new PublishError('unavailable', 'pubsub unavailable');
      return publish(request);
    };
    await expect(onSecretEvent(deps, versionAdded('rot'))).rejects.toThrow('pubsub unavailable');
    expect(publisher.published.map((r) => r.proxy)).toEqual(['init']);
  });

  it('throws when the proxies cannot be listed, so that Pub/Sub redelivers', async () => {
    store.listPage = async () => {
      throw new Error('Firestore unavailable');
    };
    await expect(onSecretEvent(deps, versionAdded('rot'))).rejects.toThrow('Firestore unavailable');
  });

  it('reads the fleet a page at a time and finds the references on every page', async () => {
    // 6 documents at 2 a page: the function never holds more than a page of full documents.
    const read = store.listPage.bind(store);
    const sizes: number[] = [];
    store.listPage = async (filter, page) => {
      const got = await read(filter, page);
      sizes.push(got.proxies.length);
      return got;
    };
    expect(await onSecretEvent({ ...deps, pageSize: 2 }, versionAdded('rot'))).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init'],
    });
    expect(sizes).toEqual([2, 2, 2]);
  });

  it('logs a fan-out past 100 proxies as its count and the first 100 names, truncated', async () => {
    for (let i = 0; i < 120; i++) {
      const name = `many-${String(i).padStart(3, '0')}`;
      await store.create(aProxy({ name, spec: managedSpec({ credentialsRef: { secret: 'rot' } }) }));
    }
    const outcome = await onSecretEvent(deps, versionAdded('rot'));
    if (outcome.kind !== 'fanned-out') throw new Error(`not fanned out: ${outcome.kind}`);
    expect(outcome.proxies).toHaveLength(123);
    const lines = deps.log.lines.filter(
      (l) => l.message === 'secret changed: referencing proxies re-enqueued',
    );
    expect(lines).toEqual([
      expect.objectContaining({ count: 123, proxies: outcome.proxies.slice(0, 100), truncated: true }),
    ]);
  });

  it('logs more than 100 unconfirmed publishes as their count and the first 100 names, truncated', async () => {
    for (let i = 0; i < 120; i++) {
      const name = `many-${String(i).padStart(3, '0')}`;
      await store.create(aProxy({ name, spec: managedSpec({ credentialsRef: { secret: 'rot' } }) }));
    }
    const sent: string[] = [];
    publisher.publish = async (request) => {
      sent.push(request.proxy);
      throw new PublishError('unconfirmed', 'no confirmation in 10 s');
    };
    await expect(onSecretEvent(deps, versionAdded('rot'))).rejects.toThrow('no confirmation in 10 s');
    expect(sent).toHaveLength(123);
    const lines = deps.log.lines.filter((l) => l.event === 'rotation.publish_unconfirmed');
    expect(lines).toEqual([
      expect.objectContaining({
        severity: 'WARNING',
        count: 123,
        proxies: sent.slice(0, 100),
        truncated: true,
      }),
    ]);
  });

  it('goes on past a page with documents that do not fit the model, and names them in a warning', async () => {
    const read = store.listPage.bind(store);
    store.listPage = async (filter, page) => {
      const got = await read(filter, page);
      return page.after === null ? { ...got, skipped: [{ name: 'broken', issues: [] }] } : got;
    };
    expect(await onSecretEvent({ ...deps, pageSize: 2 }, versionAdded('rot'))).toEqual({
      kind: 'fanned-out',
      proxies: ['creds', 'ext', 'init'],
    });
    expect(deps.log.lines).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        event: 'rotation.invalid_documents_skipped',
        count: 1,
        skipped: ['broken'],
      }),
    );
  });
});
