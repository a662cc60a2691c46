// The ReconcilePublisher port on Pub/Sub: topic reconcile-requests (shared/topology/pubsub.json).
// The payload is validated against the same schema the reconcile function decodes with.
import { ReconcileRequest } from '../../messages/reconcile-request.js';
import type { ReconcilePublisher } from '../../ports/reconcile-publisher.js';
import type { PubSubPublisher } from './publisher.js';

export const RECONCILE_TOPIC = 'reconcile-requests';

export class PubSubReconcilePublisher implements ReconcilePublisher {
  constructor(
    private readonly publisher: Pick<PubSubPublisher, 'publish'>,
    private readonly topic = RECONCILE_TOPIC,
  ) {}

  async publish(request: ReconcileRequest): Promise<void> {
    // The proxy name as an attribute lets an operator filter a subscription or the logs without decoding.
    await this.publisher.publish(this.topic, ReconcileRequest, request, { proxy: request.proxy });
  }
}
