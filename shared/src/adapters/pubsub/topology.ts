// Creates the one table's topics and subscriptions (see topology-plan.ts) with the real Pub/Sub client.
// Idempotent: an existing topic is kept, an existing subscription is updated to the table's settings
// (a restarted plane may host a function on another port), so running it twice changes nothing.
import type { PubSub, SubscriptionMetadata } from '@google-cloud/pubsub';
import type { PubSubTable } from '../../config/topology.js';
import {
  planPubSubTopology,
  type SubscriptionPlan,
  type TopologyOptions,
  type TopologyPlan,
} from './topology-plan.js';

const ALREADY_EXISTS = 6; // gRPC status code

export class TopologyError extends Error {
  constructor(
    readonly kind: 'conflict' | 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TopologyError';
  }
}

const isAlreadyExists = (err: unknown): boolean => (err as { code?: unknown })?.code === ALREADY_EXISTS;

function metadataOf(plan: SubscriptionPlan, projectId: string): SubscriptionMetadata {
  return {
    ackDeadlineSeconds: plan.ackDeadlineSeconds,
    // An empty pushConfig makes (or keeps) it a pull subscription.
    pushConfig: plan.pushEndpoint ? { pushEndpoint: plan.pushEndpoint } : {},
    ...(plan.retry && {
      retryPolicy: {
        minimumBackoff: { seconds: plan.retry.minimumBackoffSeconds },
        maximumBackoff: { seconds: plan.retry.maximumBackoffSeconds },
      },
    }),
    ...(plan.deadLetter && {
      deadLetterPolicy: {
        deadLetterTopic: `projects/${projectId}/topics/${plan.deadLetter.topic}`,
        maxDeliveryAttempts: plan.deadLetter.maxDeliveryAttempts,
      },
    }),
  };
}

async function ensureTopic(pubsub: PubSub, name: string): Promise<void> {
  try {
    await pubsub.createTopic(name);
  } catch (err) {
    if (!isAlreadyExists(err))
      throw new TopologyError('unavailable', `creating topic ${name} failed`, { cause: err });
  }
}

async function ensureSubscription(pubsub: PubSub, plan: SubscriptionPlan, projectId: string): Promise<void> {
  const metadata = metadataOf(plan, projectId);
  try {
    await pubsub.topic(plan.topic).createSubscription(plan.name, metadata);
    return;
  } catch (err) {
    if (!isAlreadyExists(err)) {
      throw new TopologyError('unavailable', `creating subscription ${plan.name} failed`, { cause: err });
    }
  }
  const subscription = pubsub.subscription(plan.name);
  const [current] = await subscription.getMetadata();
  const wantTopic = `projects/${projectId}/topics/${plan.topic}`;
  // A subscription cannot move to another topic; only deleting it could, and that would drop its backlog.
  if (current.topic !== wantTopic) {
    throw new TopologyError(
      'conflict',
      `subscription ${plan.name} is on ${current.topic}, the table says ${wantTopic}`,
    );
  }
  await subscription.setMetadata(metadata);
}

/**
 * Creates every topic of the table (and its dead-letter topic), the `dead-letters-inspect` pull
 * subscription, and a push subscription `<topic>--<consumer>` for each hosted consumer.
 * `pubsub` must be bound to `opts.projectId`.
 */
export async function ensurePubSubTopology(
  pubsub: PubSub,
  table: PubSubTable,
  opts: TopologyOptions,
): Promise<TopologyPlan> {
  const plan = planPubSubTopology(table, opts);
  await Promise.all(plan.topics.map((t) => ensureTopic(pubsub, t)));
  await Promise.all(plan.subscriptions.map((s) => ensureSubscription(pubsub, s, opts.projectId)));
  return plan;
}
