// PubSubWorkerSubscriptions against the Pub/Sub emulator: the per-worker subscription is made at
// registration, and every registration asks Pub/Sub whether it is there. A worker registers again when its
// pull finds the subscription gone (deleted by the snapshot function's retention, by Pub/Sub after a day
// unused, or by hand): an API instance that answered from its memory of having made it sent the worker back
// to the missing subscription for an hour. Here the subscription is deleted behind the instance's back.
import type { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import {
  PubSubWorkerSubscriptions,
  SubscriptionError,
  workerFilter,
} from '../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { workerSubscriptionName } from '../../shared/src/adapters/pubsub/worker-subscription.js';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { releaseProject, testProjectId } from '../support/emulators.js';

const projectId = testProjectId('demo-subs');
let pubsub: PubSub;

beforeAll(async () => {
  pubsub = createPubSub(projectId, process.env.PUBSUB_EMULATOR_HOST);
  await pubsub.createTopic(GATEWAY_SNAPSHOTS_TOPIC);
});
afterAll(async () => {
  await pubsub?.close();
  await releaseProject(projectId);
});

const exists = async (workerId: string) =>
  (await pubsub.subscription(workerSubscriptionName(workerId)).exists())[0];
const removeBehindItsBack = (workerId: string) =>
  pubsub.subscription(workerSubscriptionName(workerId)).delete();
const refusal = (p: Promise<unknown>) => p.then(() => null).catch((e: unknown) => e);

describe('PubSubWorkerSubscriptions.ensure', () => {
  it('makes the filtered subscription and returns its full name', async () => {
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId);
    expect(await subs.ensure('gw-new')).toBe(
      `projects/${projectId}/subscriptions/${workerSubscriptionName('gw-new')}`,
    );
    const [meta] = await pubsub.subscription(workerSubscriptionName('gw-new')).getMetadata();
    expect(meta.filter).toBe(workerFilter('gw-new'));
    expect(meta.topic).toBe(`projects/${projectId}/topics/${GATEWAY_SNAPSHOTS_TOPIC}`);
  });

  it('makes one it made itself again once it is deleted: the worker registering again after NOT_FOUND gets one', async () => {
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId);
    await subs.ensure('gw-back');
    await removeBehindItsBack('gw-back'); // the retention, Pub/Sub's expiry, or an operator
    await subs.ensure('gw-back'); // the same API instance, at once
    expect(await exists('gw-back')).toBe(true);
  });

  it('checks one it found already there at every registration (it may be about to expire)', async () => {
    await new PubSubWorkerSubscriptions(pubsub, projectId).ensure('gw-fixed');
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId); // a later API instance
    await subs.ensure('gw-fixed'); // found, not created
    await removeBehindItsBack('gw-fixed');
    await subs.ensure('gw-fixed');
    expect(await exists('gw-fixed')).toBe(true);
  });

  it('refuses a same-named subscription with another filter (conflict), never reusing it', async () => {
    await pubsub.topic(GATEWAY_SNAPSHOTS_TOPIC).createSubscription(workerSubscriptionName('gw-odd'), {
      filter: workerFilter('someone-else'),
    });
    const err = await refusal(new PubSubWorkerSubscriptions(pubsub, projectId).ensure('gw-odd'));
    expect(err).toBeInstanceOf(SubscriptionError);
    expect(err).toHaveProperty('kind', 'conflict');
  });

  it('refuses one left on a deleted topic (conflict): it would never deliver what the new topic carries', async () => {
    // A topic of its own, deleted and made again as a Terraform replace does.
    const topic = 'gateway-snapshots-replaced';
    await pubsub.createTopic(topic);
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId, topic);
    await subs.ensure('gw-orphan');
    await pubsub.topic(topic).delete();
    await pubsub.createTopic(topic);
    const err = await refusal(subs.ensure('gw-orphan'));
    expect(err).toBeInstanceOf(SubscriptionError);
    expect(err).toHaveProperty('kind', 'conflict');
    expect((err as Error).message).toContain('_deleted-topic_');
  });
});
