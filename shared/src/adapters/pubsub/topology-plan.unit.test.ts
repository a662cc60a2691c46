import { describe, expect, it } from 'vitest';
import { loadPubSubTable, type PubSubTable } from '../../config/topology.js';
import { DEAD_LETTER_INSPECT, planPubSubTopology } from './topology-plan.js';

const table: PubSubTable = {
  deadLetterTopic: 'dead-letters',
  topics: {
    work: {
      description: 'w',
      consumer: 'worker',
      ackDeadlineSeconds: 60,
      retry: { minimumBackoffSeconds: 10, maximumBackoffSeconds: 600 },
      localRetry: { minimumBackoffSeconds: 1, maximumBackoffSeconds: 5 },
      maxDeliveryAttempts: 7,
    },
    bare: { description: 'b', consumer: 'bare' },
    fanout: { description: 'f', consumer: null },
    'dead-letters': { description: 'd', consumer: null },
  },
};
const hosted = (name: string) =>
  name === 'worker' ? 'http://127.0.0.1:9001/' : name === 'bare' ? 'http://h:2' : undefined;

describe('planPubSubTopology', () => {
  it('makes every topic, the dead-letter inspect subscription and one push subscription per hosted consumer', () => {
    const plan = planPubSubTopology(table, { projectId: 'p', local: true, pushEndpointFor: hosted });
    expect(plan.topics.sort()).toEqual(['bare', 'dead-letters', 'fanout', 'work']);
    expect(plan.subscriptions).toEqual([
      { name: DEAD_LETTER_INSPECT, topic: 'dead-letters', ackDeadlineSeconds: 60 },
      {
        name: 'work--worker',
        topic: 'work',
        pushEndpoint: 'http://127.0.0.1:9001/projects/p/topics/work',
        ackDeadlineSeconds: 60,
        retry: { minimumBackoffSeconds: 1, maximumBackoffSeconds: 5 },
        deadLetter: { topic: 'dead-letters', maxDeliveryAttempts: 7 },
      },
      {
        name: 'bare--bare',
        topic: 'bare',
        pushEndpoint: 'http://h:2/projects/p/topics/bare',
        ackDeadlineSeconds: 10,
        deadLetter: { topic: 'dead-letters', maxDeliveryAttempts: 5 },
      },
    ]);
    expect(plan.unhosted).toEqual([]);
  });

  it('uses the GCP retry when not local', () => {
    const plan = planPubSubTopology(table, { projectId: 'p', local: false, pushEndpointFor: hosted });
    expect(plan.subscriptions.find((s) => s.name === 'work--worker')?.retry).toEqual({
      minimumBackoffSeconds: 10,
      maximumBackoffSeconds: 600,
    });
  });

  it('lists consumers that are not hosted instead of pushing to nowhere', () => {
    const plan = planPubSubTopology(table, { projectId: 'p', local: true, pushEndpointFor: () => undefined });
    expect(plan.subscriptions.map((s) => s.name)).toEqual([DEAD_LETTER_INSPECT]);
    expect(plan.unhosted).toEqual([
      { topic: 'work', consumer: 'worker' },
      { topic: 'bare', consumer: 'bare' },
    ]);
  });

  it('adds the dead-letter topic even when the table does not list it as a topic', () => {
    const plan = planPubSubTopology(
      { deadLetterTopic: 'dlq', topics: {} },
      { projectId: 'p', local: true, pushEndpointFor: () => undefined },
    );
    expect(plan.topics).toEqual(['dlq']);
  });

  it('gives every consumer of the real table a subscription with a dead-letter policy', () => {
    const real = loadPubSubTable();
    const plan = planPubSubTopology(real, {
      projectId: 'p',
      local: true,
      pushEndpointFor: () => 'http://x:1',
    });
    const consumers = Object.values(real.topics).filter((t) => t.consumer).length;
    expect(plan.subscriptions).toHaveLength(consumers + 1);
    for (const s of plan.subscriptions.slice(1)) {
      expect(s.deadLetter?.topic).toBe(real.deadLetterTopic);
      expect(s.pushEndpoint).toBe(`http://x:1/projects/p/topics/${s.topic}`);
    }
  });
});
