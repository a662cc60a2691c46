// Publishes snapshots and deltas on gateway-snapshots (contract §3 mapped onto Pub/Sub): JSON payload in
// the gateway's wire format, attributes that let the worker's subscription filter on its id and let a
// worker decide before parsing, and the worker id as ordering key so that one worker's messages arrive in
// publish order (its subscription enables message ordering). Messages of one key after a failed publish
// are refused by the client until resumePublishing, so a failure resumes the key before it is reported.
import type { PubSub, Topic } from '@google-cloud/pubsub';
import { GatewaySnapshotMessage } from '../../messages/gateway-snapshot.js';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../messages/worker-snapshot-request.js';
import type { SnapshotPublisher } from '../../ports/workers-snapshots.js';
import { PublishError } from './publisher.js';

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

  constructor(pubsub: PubSub, topic = GATEWAY_SNAPSHOTS_TOPIC) {
    this.topic = pubsub.topic(topic, { messageOrdering: true });
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
    try {
      return await this.topic.publishMessage({
        data,
        attributes: snapshotAttributes(message),
        orderingKey: message.workerId,
      });
    } catch (err) {
      this.topic.resumePublishing(message.workerId);
      throw new PublishError(
        'unavailable',
        `publishing snapshot ${message.version} for ${message.workerId} failed`,
        {
          cause: err,
        },
      );
    }
  }

  async flush(): Promise<void> {
    await this.topic.flush();
  }
}
