// Asks the snapshot function for a pass (snapshot-requests): after a registration, a report that may have
// completed a drain, an admin change. Best effort by design — the Scheduler tick runs a pass anyway — so a
// caller may log a failure instead of failing the request that prompted it.
import { SNAPSHOT_REQUESTS_TOPIC, SnapshotRequest } from '../../messages/worker-snapshot-request.js';
import { PublishError } from '../../ports/publish-error.js';
import type { SnapshotRequester } from '../../ports/workers-snapshots.js';
import { withinBudget } from '../deadline.js';
import type { PubSubPublisher } from './publisher.js';

export class PubSubSnapshotRequester implements SnapshotRequester {
  constructor(private readonly publisher: PubSubPublisher) {}

  /**
   * Waits no longer than the publisher's deadline, nor past the request budget it runs in (a worker call's,
   * withRequestBudget): PublishError 'unconfirmed' then (it may still go out), or 'unavailable' when the budget
   * was spent before it was sent. Callers log either.
   */
  async request(req: SnapshotRequest): Promise<void> {
    await withinBudget(
      null,
      () =>
        this.publisher.publish(SNAPSHOT_REQUESTS_TOPIC, SnapshotRequest, req, {
          reason: req.reason,
          ...(req.workerId ? { workerId: req.workerId } : {}),
        }),
      {
        spent: () =>
          new PublishError(
            'unavailable',
            "requesting a snapshot pass: not sent, the request's time budget is spent",
          ),
        timeout: () =>
          new PublishError(
            'unconfirmed',
            "requesting a snapshot pass: not confirmed within the request's budget",
          ),
      },
    );
  }
}
