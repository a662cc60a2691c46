import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, describe, expect, it } from 'vitest';
import { clearProject, testProjectId } from '../support/emulators.js';

describe('Google emulators started by the global setup', () => {
  const projectId = testProjectId();
  const db = new Firestore({ projectId });
  const pubsub = new PubSub({ projectId });
  afterAll(async () => {
    await db.terminate();
    await pubsub.close();
  });

  it('round-trips a document and clears it', async () => {
    await db.doc('things/a').set({ n: 1 });
    expect((await db.doc('things/a').get()).data()).toEqual({ n: 1 });
    await clearProject(projectId);
    expect((await db.doc('things/a').get()).exists).toBe(false);
  });

  it('publishes and pulls a message, and clearing removes topics', async () => {
    const [topic] = await pubsub.createTopic('smoke-topic');
    const [sub] = await topic.createSubscription('smoke-sub');
    await topic.publishMessage({ json: { hello: 'world' } });
    const message = await new Promise<{ data: Buffer }>((resolve) => {
      sub.once('message', (m) => {
        m.ack();
        resolve(m);
      });
    });
    await sub.close();
    expect(JSON.parse(message.data.toString())).toEqual({ hello: 'world' });
    await clearProject(projectId);
    const [topics] = await pubsub.getTopics();
    expect(topics).toHaveLength(0);
  });
});
