// A message published on the Pub/Sub emulator reaches a function hosted the way the plane hosts
// every function (functions-framework process, push subscription from the table) as the CloudEvent GCP
// delivers; a message its handler always fails on ends in the dead-letter topic instead of looping.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Message } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_INSPECT } from '../../shared/src/adapters/pubsub/topology-plan.js';
import type { PubSubTable } from '../../shared/src/config/topology.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';

const TOPIC = 'recorder-events';
const MAX_ATTEMPTS = 5; // Pub/Sub's minimum
const table: PubSubTable = {
  deadLetterTopic: 'dead-letters',
  topics: {
    [TOPIC]: {
      description: 'test topic',
      consumer: 'recorder',
      ackDeadlineSeconds: 10,
      localRetry: { minimumBackoffSeconds: 1, maximumBackoffSeconds: 1 },
      maxDeliveryAttempts: MAX_ATTEMPTS,
    },
    'dead-letters': { description: 'dead letters', consumer: null },
  },
};

interface Delivery {
  ce: {
    id: string;
    type: string;
    source: string;
    data: { message: { data: string; attributes?: Record<string, string>; messageId: string } };
  };
  decoded: { ok: boolean; value?: unknown; messageId?: string };
}

describe('Pub/Sub push to a hosted function', () => {
  const projectId = testProjectId();
  const dir = mkdtempSync(join(tmpdir(), 'pubsub-push-'));
  const log = join(dir, 'deliveries.jsonl');
  let plane: TestPlane;

  const deliveries = (): Delivery[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Delivery)
      : [];
  const deliveriesOf = (messageId: string) =>
    deliveries().filter((d) => d.ce.data.message.messageId === messageId);

  async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const v = probe();
      if (v !== undefined) return v;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  beforeAll(async () => {
    plane = await startTestPlane({
      projectId,
      table,
      functions: [{ name: 'recorder', source: 'test/fixtures/functions/recorder', target: 'record' }],
      env: { RECORDER_LOG: log },
    });
  });
  afterAll(async () => {
    await plane?.stop();
    await releaseProject(projectId);
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers the messagePublished CloudEvent with the decoded payload and attributes', async () => {
    const payload = { proxy: 'p-1', nonce: randomUUID() };
    const messageId = await plane.pubsub
      .topic(TOPIC)
      .publishMessage({ json: payload, attributes: { k: 'v' } });
    const [got] = await until('the delivery', () => {
      const d = deliveriesOf(messageId);
      return d.length > 0 ? d : undefined;
    });
    expect(got!.ce).toMatchObject({
      id: messageId,
      type: 'google.cloud.pubsub.topic.v1.messagePublished',
      source: `//pubsub.googleapis.com/projects/${projectId}/topics/${TOPIC}`,
      data: { message: { attributes: { k: 'v' }, messageId } },
    });
    expect(JSON.parse(Buffer.from(got!.ce.data.message.data, 'base64').toString('utf8'))).toEqual(payload);
    expect(got!.decoded).toMatchObject({ ok: true, value: payload, messageId });
    // A 204 acks: no redelivery. A nack is retried after the subscription's backoff (1 s at the least):
    // three times that, so a loaded machine does not hide a redelivery behind the wait.
    await sleep(3000);
    expect(deliveriesOf(messageId)).toHaveLength(1);
  });

  it('moves a message the handler always fails on to the dead-letter topic after maxDeliveryAttempts', async () => {
    const nonce = randomUUID();
    const dead = new Promise<Message>((resolve, reject) => {
      const sub = plane.pubsub.subscription(DEAD_LETTER_INSPECT);
      const timer = setTimeout(() => reject(new Error('no dead letter within 45 s')), 45_000);
      sub.on('message', (m: Message) => {
        m.ack();
        if (m.data.toString().includes(nonce)) {
          clearTimeout(timer);
          void sub.close();
          resolve(m);
        }
      });
      sub.on('error', reject);
    });
    const messageId = await plane.pubsub
      .topic(TOPIC)
      .publishMessage({ json: { nonce }, attributes: { fail: 'always' } });
    const letter = await dead;

    expect(JSON.parse(letter.data.toString())).toEqual({ nonce });
    expect(letter.attributes).toMatchObject({
      fail: 'always',
      CloudPubSubDeadLetterSourceDeliveryCount: String(MAX_ATTEMPTS),
      CloudPubSubDeadLetterSourceSubscription: `${TOPIC}--recorder`,
    });
    // It stopped there: exactly maxDeliveryAttempts deliveries, and no more afterwards.
    expect(deliveriesOf(messageId)).toHaveLength(MAX_ATTEMPTS);
    await sleep(2500);
    expect(deliveriesOf(messageId)).toHaveLength(MAX_ATTEMPTS);
  }, 60_000);
});
