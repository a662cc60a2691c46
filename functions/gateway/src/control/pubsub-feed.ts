// SnapshotFeed on the real @google-cloud/pubsub streaming pull (subscription.on('message')) with flow
// control: few messages outstanding at a time, since each may be a multi-megabyte full snapshot and they
// are applied one after another anyway. The client keeps extending the ack deadline of a message while
// the handler works (a 10,000-proxy snapshot with its secrets may take a while), and retries the stream
// itself on retryable errors (UNAVAILABLE and the like); only a stream it gives up on closes the
// subscription, which is reported through onClosed so the session can reopen it with backoff.
import type { Message, PubSub } from '@google-cloud/pubsub';
import type { FeedHandle, FeedMessage, FeedVerdict, SnapshotFeed } from './feed.js';

export interface PubSubFeedOptions {
  /** Messages delivered but not yet settled; default 4. */
  maxMessages?: number;
  onError?: (err: Error) => void;
}

export class PubSubSnapshotFeed implements SnapshotFeed {
  constructor(
    private readonly pubsub: PubSub,
    private readonly opts: PubSubFeedOptions = {},
  ) {}

  open(
    subscription: string,
    handle: (m: FeedMessage) => Promise<FeedVerdict>,
    onClosed: (err: Error | undefined) => void,
  ): FeedHandle {
    const sub = this.pubsub.subscription(subscription, {
      flowControl: { maxMessages: this.opts.maxMessages ?? 4, allowExcessMessages: false },
    });
    let closing = false;
    let lastError: Error | undefined;
    sub.on('message', (m: Message) => {
      const message: FeedMessage = { id: m.id, attributes: m.attributes ?? {}, data: m.data };
      handle(message).then(
        (verdict) => (verdict === 'ack' ? m.ack() : m.nack()),
        () => m.nack(),
      );
    });
    sub.on('error', (err: Error) => {
      lastError = err;
      this.opts.onError?.(err);
    });
    sub.on('close', () => {
      if (!closing) onClosed(lastError);
    });
    return {
      async close() {
        closing = true;
        sub.removeAllListeners('message');
        await sub.close();
      },
    };
  }
}
