// The one table, created on the Pub/Sub emulator with the real client: every topic, the dead-letter
// inspect subscription, a push subscription per hosted consumer carrying the table's settings; running
// it again changes nothing, and a moved function gets its push endpoint updated.
import type { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { ensurePubSubTopology } from '../../shared/src/adapters/pubsub/topology.js';
import {
  DEAD_LETTER_INSPECT,
  DEAD_LETTER_INSPECT_ACK_DEADLINE_SECONDS,
} from '../../shared/src/adapters/pubsub/topology-plan.js';
import { loadPubSubTable } from '../../shared/src/config/topology.js';
import { releaseProject, testProjectId } from '../support/emulators.js';

const table = loadPubSubTable();
const consumers = Object.entries(table.topics).filter(([, t]) => t.consumer);

describe('ensurePubSubTopology on the emulator', () => {
  const projectId = testProjectId();
  let pubsub: PubSub;
  const endpoints = (port: number) => (fn: string) =>
    fn === 'probe' ? undefined : `http://127.0.0.1:${port}`;

  const names = async () => {
    const [topics] = await pubsub.getTopics();
    const [subs] = await pubsub.getSubscriptions();
    const short = (n: string) => n.split('/').pop()!;
    return { topics: topics.map((t) => short(t.name)).sort(), subs: subs.map((s) => short(s.name)).sort() };
  };

  beforeAll(() => {
    pubsub = createPubSub(projectId, process.env.PUBSUB_EMULATOR_HOST);
  });
  afterAll(async () => {
    await releaseProject(projectId);
    await pubsub.close();
  });

  it('creates every topic and subscription of the table, once, however often it runs', async () => {
    const opts = { projectId, local: true, pushEndpointFor: endpoints(18201) };
    const plan = await ensurePubSubTopology(pubsub, table, opts);
    const first = await names();
    await ensurePubSubTopology(pubsub, table, opts);
    expect(await names()).toEqual(first);

    expect(first.topics).toEqual([...new Set([...Object.keys(table.topics), table.deadLetterTopic])].sort());
    const expectedSubs = consumers
      .filter(([, t]) => t.consumer !== 'probe')
      .map(([topic, t]) => `${topic}--${t.consumer}`);
    expect(first.subs).toEqual([DEAD_LETTER_INSPECT, ...expectedSubs].sort());
    expect(plan.unhosted).toEqual([{ topic: 'ticks-probe', consumer: 'probe' }]);
  });

  it('gives each push subscription the push path, ack deadline, local retry and dead-letter policy', async () => {
    for (const [topic, spec] of consumers.filter(([, t]) => t.consumer !== 'probe')) {
      const [meta] = await pubsub.subscription(`${topic}--${spec.consumer}`).getMetadata();
      expect(meta.topic).toBe(`projects/${projectId}/topics/${topic}`);
      expect(meta.pushConfig?.pushEndpoint).toBe(
        `http://127.0.0.1:18201/projects/${projectId}/topics/${topic}`,
      );
      expect(meta.ackDeadlineSeconds).toBe(spec.ackDeadlineSeconds);
      expect(Number(meta.retryPolicy?.minimumBackoff?.seconds)).toBe(spec.localRetry?.minimumBackoffSeconds);
      expect(Number(meta.retryPolicy?.maximumBackoff?.seconds)).toBe(spec.localRetry?.maximumBackoffSeconds);
      expect(meta.deadLetterPolicy).toMatchObject({
        deadLetterTopic: `projects/${projectId}/topics/${table.deadLetterTopic}`,
        maxDeliveryAttempts: spec.maxDeliveryAttempts,
      });
    }
    const [inspect] = await pubsub.subscription(DEAD_LETTER_INSPECT).getMetadata();
    expect(inspect.topic).toBe(`projects/${projectId}/topics/${table.deadLetterTopic}`);
    expect(inspect.pushConfig?.pushEndpoint ?? '').toBe('');
    expect(inspect.ackDeadlineSeconds).toBe(DEAD_LETTER_INSPECT_ACK_DEADLINE_SECONDS);
  });

  it('updates an existing push subscription when its function moves to another port', async () => {
    await ensurePubSubTopology(pubsub, table, { projectId, local: true, pushEndpointFor: endpoints(18999) });
    const [meta] = await pubsub.subscription('reconcile-requests--reconcile').getMetadata();
    expect(meta.pushConfig?.pushEndpoint).toBe(
      `http://127.0.0.1:18999/projects/${projectId}/topics/reconcile-requests`,
    );
  });

  it('refuses to silently rebind a subscription that sits on another topic', async () => {
    await pubsub.subscription('reconcile-requests--reconcile').delete();
    await pubsub.topic('ticks-gc').createSubscription('reconcile-requests--reconcile');
    await expect(
      ensurePubSubTopology(pubsub, table, { projectId, local: true, pushEndpointFor: endpoints(18201) }),
    ).rejects.toMatchObject({ kind: 'conflict' });
  });
});
