// Publishes snapshots and deltas on gateway-snapshots (contract §3 mapped onto Pub/Sub): JSON payload in
// the gateway's wire format, attributes that let the worker's subscription filter on its id and let a
// worker decide before parsing, and the worker id as ordering key so that one worker's messages arrive in
// publish order (its subscription enables message ordering). A failure resumes the key, as the library
// asks (in @google-cloud/pubsub 5 a no-op: a failed key's queue is dropped and the next publish starts a
// new one). A publish is answered within the deadline (DEFAULT_PUBLISH_DEADLINE_MS): the library retries
// for up to 10 minutes, and a pass held that long outlives its planner lock; an unconfirmed snapshot is
// stored but not marked sent, so the next pass re-sends it (worker-steps.ts), and a worker that already
// has it ignores the copy. Until the library settles an unconfirmed publish, later ones for that worker
// are refused rather than queued behind it: each pass's copy (a snapshot is up to 9 MiB) would wait in
// the key's next batch, in memory, and the batch, sent once the stuck one ends, would pass Pub/Sub's
// 10 MB request limit and fail every copy in it.
import type { PubSub, Topic } from '@google-cloud/pubsub';
import { GatewaySnapshotMessage } from '../../messages/gateway-snapshot.js';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../messages/worker-snapshot-request.js';
import type { SnapshotPublisher } from '../../ports/workers-snapshots.js';
import { confirmed, DEFAULT_PUBLISH_DEADLINE_MS, PublishError, type PublisherOptions } from './publisher.js';

/** Pub/Sub's limit is 10 MB per message; stay clear of it (a 10,000-proxy snapshot is ~2.6 MB). */
export const MAX_SNAPSHOT_MESSAGE_BYTES = 9 * 1024 * 1024;

export function snapshotAttributes(m: GatewaySnapshotMessage): Record<string, string> {
  return {
    workerId: m.workerId,
    kind: m.kind,
    schemaVersion: String(m.schemaVersion),
    version: String(m.version),
    baseVersion: m.kind === 'delta' ? String(m.baseVersion) : '0',
    ownershipEpoch: String(m.ownershipEpoch),
    checksum: m.checksum,
  };
}

export class PubSubSnapshotPublisher implements SnapshotPublisher {
  private readonly topic: Topic;
  private readonly deadlineMs: number | null;
  /** Workers whose publish passed its deadline unconfirmed and is still in the library's hands. */
  private readonly unsettled = new Set<string>();

  constructor(pubsub: PubSub, topic = GATEWAY_SNAPSHOTS_TOPIC, options: PublisherOptions = {}) {
    this.topic = pubsub.topic(topic, { messageOrdering: true });
    this.deadlineMs = options.deadlineMs === undefined ? DEFAULT_PUBLISH_DEADLINE_MS : options.deadlineMs;
  }

  async publish(message: GatewaySnapshotMessage): Promise<string> {
    const parsed = GatewaySnapshotMessage.safeParse(message);
    if (!parsed.success) {
      throw new PublishError(
        'invalid_payload',
        `snapshot ${message.version} for ${message.workerId} does not match its schema`,
        {
          cause: parsed.error,
        },
      );
    }
    const data = Buffer.from(JSON.stringify(parsed.data));
    if (data.length > MAX_SNAPSHOT_MESSAGE_BYTES) {
      throw new PublishError(
        'invalid_payload',
        `snapshot ${message.version} for ${message.workerId} is ${data.length} bytes`,
      );
    }
    const key = message.workerId;
    const what = `publishing snapshot ${message.version} for ${key}`;
    if (this.unsettled.has(key)) {
      throw new PublishError(
        'unavailable',
        `${what}: an earlier one is still not confirmed; not queued behind it`,
      );
    }
    const sent = this.topic.publishMessage({
      data,
      attributes: snapshotAttributes(message),
      orderingKey: key,
    });
    sent.catch(() => this.topic.resumePublishing(key));
    try {
      return await confirmed(sent, this.deadlineMs, what);
    } catch (err) {
      if (err instanceof PublishError && err.kind === 'unconfirmed') {
        this.unsettled.add(key);
        const settled = () => this.unsettled.delete(key);
        sent.then(settled, settled);
      }
      throw err;
    }
  }

  async flush(): Promise<void> {
    await this.topic.flush();
  }
}
