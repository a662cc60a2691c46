// What the one table (shared/topology/pubsub.json) means as Pub/Sub resources, as plain data, so the
// naming and retry rules are unit-tested apart from the client that creates them (topology.ts).
// On GCP, Terraform makes the same topics, and each function's push subscription is `<consumer>-push`
// (terraform/pubsub.tf, function_trigger = "pubsub-push") or the one its Eventarc trigger owns
// (`eventarc`); the local plane's are `<topic>--<consumer>`.
import type { PubSubTable, TopicSpec } from '../../config/topology.js';

/** The pull subscription on the dead-letter topic that operators and tests read. */
export const DEAD_LETTER_INSPECT = 'dead-letters-inspect';

export const pushSubscriptionName = (topic: string, consumer: string): string => `${topic}--${consumer}`;

/**
 * The push path the functions-framework needs to build the CloudEvent `source`
 * (//pubsub.googleapis.com/projects/<p>/topics/<t>); pushing to `/` loses the topic (recipes §1, caveat 1).
 */
export const pushPath = (projectId: string, topic: string): string =>
  `/projects/${projectId}/topics/${topic}`;

export interface TopologyOptions {
  projectId: string;
  /** Base URL (http://host:port) of the server hosting a consumer function; undefined = not hosted. */
  pushEndpointFor(functionName: string): string | undefined;
  /** Use each topic's `localRetry` (short backoff on the emulator) instead of `retry`. */
  local: boolean;
}

export interface SubscriptionPlan {
  name: string;
  topic: string;
  /** Absent for a pull subscription. */
  pushEndpoint?: string;
  ackDeadlineSeconds: number;
  retry?: { minimumBackoffSeconds: number; maximumBackoffSeconds: number };
  deadLetter?: { topic: string; maxDeliveryAttempts: number };
}

export interface TopologyPlan {
  topics: string[];
  subscriptions: SubscriptionPlan[];
  /** Topics whose consumer function is not hosted: no push subscription is made for them. */
  unhosted: Array<{ topic: string; consumer: string }>;
}

const DEFAULT_ACK_DEADLINE_SECONDS = 10;
/**
 * dead-letters-inspect's, as Terraform makes it (terraform/pubsub.tf, test/terraform/wiring.test.ts): the
 * runbook's pull-then-acknowledge (docs/operations.md § Dead letters) has a minute, locally too.
 */
export const DEAD_LETTER_INSPECT_ACK_DEADLINE_SECONDS = 60;
// Pub/Sub's own default when a dead-letter policy omits it.
const DEFAULT_MAX_DELIVERY_ATTEMPTS = 5;

function pushSubscription(
  topic: string,
  spec: TopicSpec,
  endpoint: string,
  table: PubSubTable,
  opts: TopologyOptions,
) {
  const retry = opts.local ? (spec.localRetry ?? spec.retry) : spec.retry;
  const plan: SubscriptionPlan = {
    name: pushSubscriptionName(topic, spec.consumer!),
    topic,
    pushEndpoint: endpoint.replace(/\/+$/, '') + pushPath(opts.projectId, topic),
    ackDeadlineSeconds: spec.ackDeadlineSeconds ?? DEFAULT_ACK_DEADLINE_SECONDS,
    deadLetter: {
      topic: table.deadLetterTopic,
      maxDeliveryAttempts: spec.maxDeliveryAttempts ?? DEFAULT_MAX_DELIVERY_ATTEMPTS,
    },
  };
  if (retry) plan.retry = retry;
  return plan;
}

export function planPubSubTopology(table: PubSubTable, opts: TopologyOptions): TopologyPlan {
  const topics = [...new Set([...Object.keys(table.topics), table.deadLetterTopic])];
  const subscriptions: SubscriptionPlan[] = [
    {
      name: DEAD_LETTER_INSPECT,
      topic: table.deadLetterTopic,
      ackDeadlineSeconds: DEAD_LETTER_INSPECT_ACK_DEADLINE_SECONDS,
    },
  ];
  const unhosted: TopologyPlan['unhosted'] = [];
  for (const [topic, spec] of Object.entries(table.topics)) {
    if (!spec.consumer) continue;
    const endpoint = opts.pushEndpointFor(spec.consumer);
    if (endpoint === undefined) unhosted.push({ topic, consumer: spec.consumer });
    else subscriptions.push(pushSubscription(topic, spec, endpoint, table, opts));
  }
  return { topics, subscriptions, unhosted };
}
