// The maps terraform/modules/tables must produce, derived from the tables as the code loads them
// (shared/src/config/topology.ts). tooling.test.ts proves Terraform's own outputs equal these; the
// wiring tests instantiate the root module over Terraform's outputs when terraform is on PATH, over
// these otherwise.
import {
  loadFunctionTable,
  loadPubSubTable,
  loadScheduleTable,
  type PubSubTable,
} from '../../../shared/src/config/topology.js';
import { tablesModuleDir, topologyDir } from './paths.js';
import { plannedOutputs, terraformAvailable } from './terraform-cli.js';

export interface TopicOut {
  name: string;
  description: string;
  consumer: string | null;
}
export interface PushSubscriptionOut {
  topic: string;
  consumer: string;
  ack_deadline_seconds: number;
  minimum_backoff: string;
  maximum_backoff: string;
  max_delivery_attempts: number;
  dead_letter_topic: string;
}
export interface FunctionOut {
  name: string;
  source_dir: string;
  entry_point: string;
  topic: string;
  retry: boolean;
  retry_policy: string;
  timeout_seconds: number;
  available_memory: string;
  subscription: string;
}
export interface ScheduleOut {
  name: string;
  description: string;
  schedule: string;
  time_zone: string;
  topic: string;
  data_json: string;
}
export interface TablesOut {
  topics: Record<string, TopicOut>;
  push_subscriptions: Record<string, PushSubscriptionOut>;
  dead_letter_topic: string;
  dead_letter_inspect_subscription: string;
  functions: Record<string, FunctionOut>;
  schedules: Record<string, ScheduleOut>;
}

const map = <T, U>(record: Record<string, T>, fn: (name: string, v: T) => U): Record<string, U> =>
  Object.fromEntries(Object.entries(record).map(([name, v]) => [name, fn(name, v)]));

function pushSubscriptions(pubsub: PubSubTable): Record<string, PushSubscriptionOut> {
  const out: Record<string, PushSubscriptionOut> = {};
  for (const [topic, t] of Object.entries(pubsub.topics)) {
    if (t.consumer === null) continue;
    out[`${t.consumer}-push`] = {
      topic,
      consumer: t.consumer,
      ack_deadline_seconds: t.ackDeadlineSeconds!,
      minimum_backoff: `${t.retry!.minimumBackoffSeconds}s`,
      maximum_backoff: `${t.retry!.maximumBackoffSeconds}s`,
      max_delivery_attempts: t.maxDeliveryAttempts!,
      dead_letter_topic: pubsub.deadLetterTopic,
    };
  }
  return out;
}

export function expectedTables(): TablesOut {
  const pubsub = loadPubSubTable();
  const schedule = loadScheduleTable();
  return {
    topics: map(pubsub.topics, (name, t) => ({ name, description: t.description, consumer: t.consumer })),
    push_subscriptions: pushSubscriptions(pubsub),
    dead_letter_topic: pubsub.deadLetterTopic,
    dead_letter_inspect_subscription: `${pubsub.deadLetterTopic}-inspect`,
    functions: map(loadFunctionTable().functions, (name, f) => ({
      name,
      source_dir: f.source,
      entry_point: f.target,
      topic: f.topic,
      retry: f.retry,
      retry_policy: f.retry ? 'RETRY_POLICY_RETRY' : 'RETRY_POLICY_DO_NOT_RETRY',
      timeout_seconds: f.timeoutSeconds,
      available_memory: f.memory,
      subscription: `${name}-push`,
    })),
    schedules: map(schedule.jobs, (name, j) => ({
      name,
      description: j.description,
      schedule: j.schedule,
      time_zone: schedule.timeZone,
      topic: j.topic,
      data_json: JSON.stringify(j.data),
    })),
  };
}

/** Schedules with data_json parsed, so Terraform's jsonencode and JSON.stringify compare by content. */
export function comparable(tables: TablesOut): unknown {
  return {
    ...tables,
    schedules: map(tables.schedules, (_, s) => ({ ...s, data_json: JSON.parse(s.data_json) as unknown })),
  };
}

/** terraform/modules/tables' outputs, as `terraform plan` computes them from the real tables. */
export const plannedTables = (): TablesOut =>
  plannedOutputs(tablesModuleDir, { topology_dir: topologyDir }) as unknown as TablesOut;

/** What the root module's for_each loops iterate over: Terraform's own outputs when it can compute them. */
export const wiringTables = (): TablesOut => (terraformAvailable ? plannedTables() : expectedTables());
