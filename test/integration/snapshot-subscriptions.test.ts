// PubSubWorkerSubscriptions against the Pub/Sub emulator: the per-worker subscription is made at
// registration, and what the API instance remembers about it must not outlive it. Pub/Sub deletes a
// subscription after 24 h without activity; a cache that never expired told a worker back after a day
// away that a deleted subscription existed. Here the subscription is deleted behind the cache's back.
import type { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import {
  CREATED_SUBSCRIPTION_TRUSTED_MS,
  PubSubWorkerSubscriptions,
  SubscriptionError,
  workerFilter,
  workerSubscriptionName,
} from '../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
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

describe('PubSubWorkerSubscriptions.ensure', () => {
  it('makes the filtered subscription and returns its full name', async () => {
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId, new ManualClock());
    expect(await subs.ensure('gw-new')).toBe(
      `projects/${projectId}/subscriptions/${workerSubscriptionName('gw-new')}`,
    );
    const [meta] = await pubsub.subscription(workerSubscriptionName('gw-new')).getMetadata();
    expect(meta.filter).toBe(workerFilter('gw-new'));
  });

  it('trusts one it created for an hour at most: after that a deleted subscription is made again', async () => {
    const clock = new ManualClock();
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId, clock);
    await subs.ensure('gw-away');
    await removeBehindItsBack('gw-away');
    clock.advance(CREATED_SUBSCRIPTION_TRUSTED_MS - 1);
    await subs.ensure('gw-away');
    expect(await exists('gw-away')).toBe(false); // still trusted: created < 1 h ago, so Pub/Sub keeps it
    clock.advance(24 * 3600 * 1000); // the worker was away a day: Pub/Sub would have expired it
    await subs.ensure('gw-away');
    expect(await exists('gw-away')).toBe(true);
  });

  it('forgets the subscriptions it created once their hour is over: it holds the last hour of workers, not every one', async () => {
    // Every gateway instance registers under a worker id of its own: on a long-lived API instance the
    // remembered names grew by one per instance start the plane ever saw.
    const clock = new ManualClock();
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId, clock);
    for (const id of ['gw-old-1', 'gw-old-2', 'gw-old-3']) await subs.ensure(id);
    expect(subs.remembered).toBe(3);
    clock.advance(CREATED_SUBSCRIPTION_TRUSTED_MS);
    await subs.ensure('gw-fresh');
    expect(subs.remembered).toBe(1);
  });

  it('checks one it found already there at every registration (it may be about to expire)', async () => {
    const clock = new ManualClock();
    await new PubSubWorkerSubscriptions(pubsub, projectId, clock).ensure('gw-fixed');
    const subs = new PubSubWorkerSubscriptions(pubsub, projectId, clock); // a later API instance
    await subs.ensure('gw-fixed'); // found, not created
    await removeBehindItsBack('gw-fixed');
    await subs.ensure('gw-fixed');
    expect(await exists('gw-fixed')).toBe(true);
  });

  it('refuses a same-named subscription with another filter (conflict), never reusing it', async () => {
    await pubsub.topic(GATEWAY_SNAPSHOTS_TOPIC).createSubscription(workerSubscriptionName('gw-odd'), {
      filter: workerFilter('someone-else'),
    });
    const err = await new PubSubWorkerSubscriptions(pubsub, projectId)
      .ensure('gw-odd')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SubscriptionError);
    expect(err).toHaveProperty('kind', 'conflict');
  });
});
