// What the API that makes a gateway worker's snapshot subscription (snapshot-subscriptions.ts) and the
// snapshot function that deletes it (subscription-reaper.ts) agree on. Apart from both so that neither
// unit's code carries the other's admin calls: Terraform grants each exactly the calls its code makes.
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../messages/worker-snapshot-request.js';

export const workerSubscriptionName = (workerId: string): string =>
  `${GATEWAY_SNAPSHOTS_TOPIC}--worker-${workerId}`;

/**
 * Pub/Sub deletes a worker's subscription after this long without a subscriber (its expirationPolicy):
 * the retention need not delete one whose worker's session ended longer ago than this.
 */
export const WORKER_SUBSCRIPTION_EXPIRY_SECONDS = 86_400;
