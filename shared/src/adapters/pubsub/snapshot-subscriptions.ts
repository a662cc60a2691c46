// The per-worker pull subscription on gateway-snapshots, made by the API at registration (Terraform grants
// it the right to): filtered on the worker's id, ordered, short retention, deleted by the snapshot
// function's retention once its worker's session ended more than the view horizon ago, and by Pub/Sub after
// a day unused. The filter is immutable once made and a subscription cannot move to another topic, so an
// existing one with another filter, or left on a deleted topic, is a conflict to fix by hand, never
// silently reused. Real Pub/Sub applies the filter; the emulator stores it but delivers everything
// (recipes §10), which is why workers also check the workerId attribute.
import type { CallOptions, PubSub } from '@google-cloud/pubsub';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../messages/worker-snapshot-request.js';
import type { WorkerSubscriptions } from '../../ports/workers-snapshots.js';
import { withinBudget } from '../deadline.js';
import { WORKER_SUBSCRIPTION_EXPIRY_SECONDS, workerSubscriptionName } from './worker-subscription.js';

const ALREADY_EXISTS = 6;

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

export interface SubscriptionsOptions {
  /**
   * The most one ensure (both its admin calls together) waits before it is answered `unavailable`; null
   * (the default): as long as the client library takes (60 s a call, UNAVAILABLE retried up to 10 min).
   * Each admin call is also sent with it as its own deadline, unretried, so the call itself ends. Inside a
   * request budget (withRequestBudget) the bound is cut to what is left of it.
   */
  deadlineMs?: number | null;
}

/**
 * Every registration asks Pub/Sub (create; when it is already there, read its topic and filter): at most
 * two admin calls, once per worker start or lost session. Nothing is remembered between registrations: a
 * worker registers again precisely when its pull found the subscription gone (snapshot-pull.ts) — deleted
 * by the retention, by Pub/Sub or by hand — and an instance that answered from a memory of having made it
 * sent the worker back to the missing subscription, NOT_FOUND again, for as long as it trusted that memory.
 */
export class PubSubWorkerSubscriptions implements WorkerSubscriptions {
  constructor(
    private readonly pubsub: PubSub,
    private readonly projectId: string,
    private readonly topic = GATEWAY_SNAPSHOTS_TOPIC,
    private readonly options: SubscriptionsOptions = {},
  ) {}

  async ensure(workerId: string): Promise<string> {
    const name = workerSubscriptionName(workerId);
    // Cut to what is left of the request's budget (registration's, routes.ts), when it runs in one; not
    // asked once it is spent. Each admin call is also given the bound itself, unretried (gax's own deadline
    // ends the call): without it every registration retried through a stall left a create running in the
    // library's retries for up to 10 min. withinBudget still bounds the two together; a late answer or
    // failure is dropped there (a late create is found by the next registration's ALREADY_EXISTS).
    return withinBudget(
      this.options.deadlineMs,
      (bound) =>
        this.make(name, workerId, bound === null ? undefined : { timeout: Math.ceil(bound), retry: null }),
      {
        spent: () =>
          new SubscriptionError('unavailable', `${name}: not asked, the request's time budget is spent`),
        timeout: (bound) =>
          new SubscriptionError(
            'unavailable',
            `${name}: Pub/Sub did not answer within ${Math.ceil(bound)} ms`,
          ),
      },
    );
  }

  private async make(name: string, workerId: string, gaxOpts?: CallOptions): Promise<string> {
    try {
      await this.pubsub.topic(this.topic).createSubscription(name, {
        ...(gaxOpts ? { gaxOpts } : {}),
        filter: workerFilter(workerId),
        enableMessageOrdering: true,
        ackDeadlineSeconds: 30,
        messageRetentionDuration: { seconds: 3600 },
        expirationPolicy: { ttl: { seconds: WORKER_SUBSCRIPTION_EXPIRY_SECONDS } },
        retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 30 } },
      });
    } catch (err) {
      if ((err as { code?: unknown })?.code !== ALREADY_EXISTS) {
        throw new SubscriptionError('unavailable', `creating ${name} failed`, { cause: err });
      }
      await this.checkExisting(name, workerId, gaxOpts);
    }
    return `projects/${this.projectId}/subscriptions/${name}`;
  }

  private async checkExisting(name: string, workerId: string, gaxOpts?: CallOptions): Promise<void> {
    let topic: string | null | undefined;
    let filter: string | null | undefined;
    try {
      [{ topic, filter }] = await this.pubsub.subscription(name).getMetadata(gaxOpts);
    } catch (cause) {
      throw new SubscriptionError('unavailable', `reading ${name} failed`, { cause });
    }
    // The topic deleted and made again (a Terraform replace, by hand): the subscription stays, attached to
    // `_deleted-topic_`, and would never deliver. The API may not delete subscriptions (terraform/iam.tf).
    const expected = `projects/${this.projectId}/topics/${this.topic}`;
    if (topic !== expected) {
      throw new SubscriptionError(
        'conflict',
        `${name} is attached to ${JSON.stringify(topic)}, not ${expected}: delete it, the next registration makes it again`,
      );
    }
    if ((filter ?? '') !== workerFilter(workerId)) {
      throw new SubscriptionError('conflict', `${name} exists with filter ${JSON.stringify(filter)}`);
    }
  }
}
