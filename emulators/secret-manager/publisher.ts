// Publishes the emulator's notifications with the real Pub/Sub client (against PUBSUB_EMULATOR_HOST
// locally). A failed publish is logged and never fails the API call that caused it; each publish is
// bounded so a stuck Pub/Sub cannot hold an API response for long.
import type { PubSub, Topic } from '@google-cloud/pubsub';
import type { Notification } from './events.js';

export type Severity = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';
export type EmulatorLog = (severity: Severity, message: string, fields?: Record<string, unknown>) => void;

export const jsonLog: EmulatorLog = (severity, message, fields) =>
  console.log(JSON.stringify({ severity, message, component: 'secret-manager-emulator', ...fields }));

export class NotificationPublisher {
  private readonly topics = new Map<string, Topic>();

  constructor(
    private readonly pubsub: PubSub | undefined,
    private readonly log: EmulatorLog,
    private readonly timeoutMs = 5_000,
  ) {}

  /** In order, so TOPIC_CONFIGURED reaches a topic before the SECRET_CREATE that follows it. */
  async publish(notifications: Notification[]): Promise<void> {
    if (!this.pubsub) return;
    for (const n of notifications) {
      await Promise.all(n.topics.map((topic) => this.publishOne(topic, n)));
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.topics.values()].map((t) => t.flush()));
    this.topics.clear();
  }

  private async publishOne(topicName: string, n: Notification): Promise<void> {
    let topic = this.topics.get(topicName);
    if (!topic) {
      topic = this.pubsub!.topic(topicName);
      this.topics.set(topicName, topic);
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      await Promise.race([
        topic.publishMessage({ data: Buffer.from(n.data, 'utf8'), attributes: n.attributes }),
        timeout,
      ]);
    } catch (err) {
      this.log('WARNING', 'publishing a Secret Manager notification failed', {
        topic: topicName,
        eventType: n.attributes.eventType,
        error: err instanceof Error ? err.message : String(err),
      });
    } finally {
      clearTimeout(timer);
    }
  }
}
