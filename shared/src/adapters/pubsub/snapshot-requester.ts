// Asks the snapshot function for a pass (snapshot-requests): after a registration, a report that may have
// completed a drain, an admin change. Best effort by design — the Scheduler tick runs a pass anyway — so a
// caller may log a failure instead of failing the request that prompted it.
import { SNAPSHOT_REQUESTS_TOPIC, SnapshotRequest } from '../../messages/worker-snapshot-request.js';
import type { SnapshotRequester } from '../../ports/workers-snapshots.js';
import type { PubSubPublisher } from './publisher.js';

export class PubSubSnapshotRequester implements SnapshotRequester {
  constructor(private readonly publisher: PubSubPublisher) {}

  async request(req: SnapshotRequest): Promise<void> {
    await this.publisher.publish(SNAPSHOT_REQUESTS_TOPIC, SnapshotRequest, req, {
      reason: req.reason,
      ...(req.workerId ? { workerId: req.workerId } : {}),
    });
  }
}
