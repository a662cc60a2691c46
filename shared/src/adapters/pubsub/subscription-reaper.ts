// SubscriptionReaper on Pub/Sub: deletes a gateway worker's snapshot subscription for the snapshot
// function's retention. Terraform grants the function pubsub.subscriptions.delete and nothing else of
// Pub/Sub's admin calls (terraform/iam.tf); it only ever names a worker subscription.
import type { PubSub } from '@google-cloud/pubsub';
import type { SubscriptionReaper } from '../../ports/workers-retention.js';
import { withDeadline } from '../deadline.js';
import { canonicalCode } from '../google-error-code.js';
import { workerSubscriptionName } from './worker-subscription.js';

/**
 * One delete's bound, its retries included. The library's own settings allow 60 s an attempt and retry
 * UNAVAILABLE for 600 s: in an admin-API brownout one delete held the snapshot tick to its 120 s timeout,
 * and the tick was killed and redelivered (passes piling up) with its run unrecorded. A delete cut short
 * is a failure the next tick tries again.
 */
export const SUBSCRIPTION_DELETE_TIMEOUT_MS = 10_000;

export class PubSubSubscriptionReaper implements SubscriptionReaper {
  constructor(
    private readonly pubsub: PubSub,
    private readonly timeoutMs = SUBSCRIPTION_DELETE_TIMEOUT_MS,
  ) {}

  async remove(workerId: string): Promise<boolean> {
    const name = workerSubscriptionName(workerId);
    try {
      const deleting = this.pubsub.subscription(name).delete({ timeout: this.timeoutMs, maxRetries: 2 });
      await withDeadline(
        deleting,
        this.timeoutMs,
        () => new Error(`deleting subscription ${name}: no answer within ${this.timeoutMs} ms`),
      );
      return true;
    } catch (err) {
      // Expired (a day without a subscriber), deleted by hand, by another tick, or never made — or a name
      // Pub/Sub refuses (a worker document made by hand, its id no subscription's): none to delete.
      // Thrown, it stopped the retention at that worker every tick until the one-day floor passed it.
      const code = canonicalCode(err);
      if (code === 'NOT_FOUND' || code === 'INVALID_ARGUMENT') return false;
      throw err;
    }
  }
}
