// SubscriptionReaper on Pub/Sub: deletes a gateway worker's snapshot subscription for the snapshot
// function's retention. Terraform grants the function pubsub.subscriptions.delete and nothing else of
// Pub/Sub's admin calls (terraform/iam.tf); it only ever names a worker subscription.
import type { PubSub } from '@google-cloud/pubsub';
import type { SubscriptionReaper } from '../../ports/workers-retention.js';
import { workerSubscriptionName } from './worker-subscription.js';

const NOT_FOUND = 5;

export class PubSubSubscriptionReaper implements SubscriptionReaper {
  constructor(private readonly pubsub: PubSub) {}

  async remove(workerId: string): Promise<boolean> {
    const name = workerSubscriptionName(workerId);
    try {
      await this.pubsub.subscription(name).delete();
      return true;
    } catch (err) {
      // Expired (a day without a subscriber), deleted by hand, by another tick, or never made.
      if ((err as { code?: unknown })?.code === NOT_FOUND) return false;
      throw err;
    }
  }
}
