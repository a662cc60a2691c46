// The per-worker pull subscription on gateway-snapshots, made by the API at registration (Terraform grants
// it the right to): filtered on the worker's id, ordered, short retention, deleted by Pub/Sub after a day
// unused. The filter is immutable once made, so an existing subscription with another filter is a
// conflict to fix by hand, never silently reused. Real Pub/Sub applies the filter; the emulator stores it
// but delivers everything (recipes §10), which is why workers also check the workerId attribute.
import type { PubSub } from '@google-cloud/pubsub';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../messages/worker-snapshot-request.js';
import { type Clock, systemClock } from '../../ports/clock.js';
import type { WorkerSubscriptions } from '../../ports/workers-snapshots.js';

const ALREADY_EXISTS = 6;

export const workerSubscriptionName = (workerId: string): string =>
  `${GATEWAY_SNAPSHOTS_TOPIC}--worker-${workerId}`;
export const workerFilter = (workerId: string): string => `attributes.workerId = "${workerId}"`;

export class SubscriptionError extends Error {
  constructor(
    readonly kind: 'conflict' | 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SubscriptionError';
  }
}

/**
 * How long a subscription this instance CREATED is taken to exist without asking again. Pub/Sub deletes a
 * subscription after 24 h without subscriber activity (expirationPolicy below), so one created less than
 * an hour ago cannot have expired. One found already there is never cached: it may have been idle for
 * nearly a day already and expire minutes later, before its worker pulls — so it is checked at every
 * registration (two admin calls, once per worker start). A cache that never expired told a worker back
 * after a day away on a long-lived API instance a subscription Pub/Sub had deleted.
 */
export const CREATED_SUBSCRIPTION_TRUSTED_MS = 60 * 60 * 1000;

export class PubSubWorkerSubscriptions implements WorkerSubscriptions {
  /** Subscription name → until when it is taken to exist; the last hour's only. */
  private readonly created = new Map<string, number>();

  constructor(
    private readonly pubsub: PubSub,
    private readonly projectId: string,
    private readonly clock: Clock = systemClock,
    private readonly topic = GATEWAY_SNAPSHOTS_TOPIC,
  ) {}

  /** How many created subscriptions this instance remembers (those of the last hour). */
  get remembered(): number {
    return this.created.size;
  }

  async ensure(workerId: string): Promise<string> {
    const name = workerSubscriptionName(workerId);
    const path = `projects/${this.projectId}/subscriptions/${name}`;
    const now = this.clock.now().getTime();
    if ((this.created.get(name) ?? 0) > now) return path;
    this.created.delete(name);
    // The names are kept in the order they were trusted until (each for the same hour): drop those whose
    // hour is over, or every worker id an API instance ever registered would stay (one per gateway start).
    for (const [n, until] of this.created) {
      if (until > now) break;
      this.created.delete(n);
    }
    try {
      await this.pubsub.topic(this.topic).createSubscription(name, {
        filter: workerFilter(workerId),
        enableMessageOrdering: true,
        ackDeadlineSeconds: 30,
        messageRetentionDuration: { seconds: 3600 },
        expirationPolicy: { ttl: { seconds: 86_400 } },
        retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 30 } },
      });
      this.created.set(name, now + CREATED_SUBSCRIPTION_TRUSTED_MS);
    } catch (err) {
      if ((err as { code?: unknown })?.code !== ALREADY_EXISTS) {
        throw new SubscriptionError('unavailable', `creating ${name} failed`, { cause: err });
      }
      let filter: string | null | undefined;
      try {
        [{ filter }] = await this.pubsub.subscription(name).getMetadata();
      } catch (cause) {
        throw new SubscriptionError('unavailable', `reading ${name} failed`, { cause });
      }
      if ((filter ?? '') !== workerFilter(workerId)) {
        throw new SubscriptionError('conflict', `${name} exists with filter ${JSON.stringify(filter)}`);
      }
    }
    return path;
  }
}
