import type { ReconcileRequest } from '../messages/reconcile-request.js';

/** Publishes reconcile requests (Pub/Sub topic reconcile-requests). At-least-once; consumers are idempotent. */
export interface ReconcilePublisher {
  publish(request: ReconcileRequest): Promise<void>;
}
