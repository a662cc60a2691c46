// Secret Manager's Pub/Sub notifications, as the emulator publishes them to the Pub/Sub emulator with the
// real Pub/Sub client, pulled back with the real Pub/Sub client.
import { type Message, PubSub, type Subscription } from '@google-cloud/pubsub';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { clearProject, testProjectId } from '../support/emulators.js';

type Emulator = Awaited<ReturnType<typeof startSecretManagerEmulator>>;

/** Collects everything a subscription receives, acking it. */
function collect(sub: Subscription) {
  const messages: Message[] = [];
  sub.on('message', (m: Message) => {
    m.ack();
    messages.push(m);
  });
  return {
    messages,
    async waitFor(pred: (m: Message) => boolean, timeoutMs = 20_000): Promise<Message> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const found = messages.find(pred);
        if (found) return found;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(
        `no matching message in ${timeoutMs} ms; got ${messages.map((m) => m.attributes.eventType)}`,
      );
    },
  };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe('Secret Manager notifications on Pub/Sub', () => {
  const project = testProjectId();
  const pubsub = new PubSub({ projectId: project });
  const topicName = `projects/${project}/topics/secret-events`;
  const secretName = `projects/${project}/secrets/rotating`;
  const logs: Array<{ severity: string; message: string; fields?: Record<string, unknown> }> = [];
  let emulator: Emulator;
  let client: SecretManagerServiceClient;
  let inbox: ReturnType<typeof collect>;
  let sub: Subscription;

  beforeAll(async () => {
    const [topic] = await pubsub.createTopic('secret-events');
    [sub] = await topic.createSubscription('secret-events-test');
    inbox = collect(sub);
    emulator = await startSecretManagerEmulator({
      pubsub,
      log: (severity, message, fields) => logs.push({ severity, message, fields }),
    });
    client = createSecretManagerClient(`${emulator.host}:${emulator.port}`);
    await client.createSecret({
      parent: `projects/${project}`,
      secretId: 'rotating',
      secret: { replication: { automatic: {} }, topics: [{ name: topicName }] },
    });
  });
  afterAll(async () => {
    await sub.close();
    await client.close();
    await emulator.stop();
    await pubsub.close();
    await clearProject(project);
  });

  it('sends TOPIC_CONFIGURED (no data, eventType only) and SECRET_CREATE when the secret is created', async () => {
    const configured = await inbox.waitFor((m) => m.attributes.eventType === 'TOPIC_CONFIGURED');
    expect(configured.attributes).toEqual({ eventType: 'TOPIC_CONFIGURED' });
    expect(configured.data.length).toBe(0);
    const created = await inbox.waitFor((m) => m.attributes.eventType === 'SECRET_CREATE');
    expect(created.attributes).toEqual({
      eventType: 'SECRET_CREATE',
      dataFormat: 'JSON_API_V1',
      secretId: secretName,
      timestamp: expect.stringMatching(ISO),
    });
    expect(JSON.parse(created.data.toString())).toMatchObject({
      name: secretName,
      topics: [{ name: topicName }],
    });
  });

  it('adding a version publishes SECRET_VERSION_ADD with the version resource as JSON', async () => {
    const [version] = await client.addSecretVersion({
      parent: secretName,
      payload: { data: Buffer.from('bob:hunter2-rotated') },
    });
    const added = await inbox.waitFor((m) => m.attributes.eventType === 'SECRET_VERSION_ADD');
    expect(added.attributes).toEqual({
      eventType: 'SECRET_VERSION_ADD',
      dataFormat: 'JSON_API_V1',
      secretId: secretName,
      versionId: version.name,
      timestamp: expect.stringMatching(ISO),
    });
    const data = JSON.parse(added.data.toString());
    // proto3 JSON mapping: enum names, not the numbers the API client asked for.
    expect(data).toMatchObject({ name: `${secretName}/versions/1`, state: 'ENABLED' });
    // The payload itself never travels in a notification.
    expect(added.data.toString()).not.toContain('hunter2');
    expect(added.data.toString()).not.toContain(Buffer.from('bob:hunter2-rotated').toString('base64'));
  });

  it('disable, enable, destroy and delete each publish their event', async () => {
    const v = `${secretName}/versions/1`;
    await client.disableSecretVersion({ name: v });
    await client.enableSecretVersion({ name: v });
    await client.destroySecretVersion({ name: v });
    await client.deleteSecret({ name: secretName });
    for (const [type, state] of [
      ['SECRET_VERSION_DISABLE', 'DISABLED'],
      ['SECRET_VERSION_ENABLE', 'ENABLED'],
      ['SECRET_VERSION_DESTROY', 'DESTROYED'],
    ] as const) {
      const m = await inbox.waitFor((x) => x.attributes.eventType === type);
      expect(m.attributes.versionId).toBe(v);
      expect(JSON.parse(m.data.toString()).state).toBe(state);
    }
    const deleted = await inbox.waitFor((m) => m.attributes.eventType === 'SECRET_DELETE');
    expect(deleted.attributes).toMatchObject({ secretId: secretName, deleteType: 'REQUESTED' });
    expect(deleted.attributes.versionId).toBeUndefined();
  });

  it('a notification that cannot be published is logged, and the API call still succeeds', async () => {
    const [secret] = await client.createSecret({
      parent: `projects/${project}`,
      secretId: 'orphan-topic',
      secret: {
        replication: { automatic: {} },
        topics: [{ name: `projects/${project}/topics/does-not-exist` }],
      },
    });
    expect(secret.name).toBe(`projects/${project}/secrets/orphan-topic`);
    expect(logs).toContainEqual(
      expect.objectContaining({
        severity: 'WARNING',
        fields: expect.objectContaining({ topic: `projects/${project}/topics/does-not-exist` }),
      }),
    );
  });
});
