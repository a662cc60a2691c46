// A ReconcilePublisher that records what was published (validated against the message schema, as the
// Pub/Sub adapter would serialise it) and can be told to fail, for "nothing was published" assertions.
import { ReconcileRequest } from '../messages/reconcile-request.js';
import type { ReconcilePublisher } from '../ports/reconcile-publisher.js';

export class RecordingReconcilePublisher implements ReconcilePublisher {
  readonly published: ReconcileRequest[] = [];
  private failures: unknown[] = [];

  /** The next publish call throws `error` (once per call of failNext). */
  failNext(error: unknown = new Error('publish failed')): void {
    this.failures.push(error);
  }

  async publish(request: ReconcileRequest): Promise<void> {
    if (this.failures.length > 0) throw this.failures.shift();
    this.published.push(ReconcileRequest.parse(request));
  }
}
