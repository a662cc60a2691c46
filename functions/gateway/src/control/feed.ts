// The port the session pulls snapshots through: a streaming pull of the worker's own subscription, each
// message settled by the handler's verdict (ack or nack) only once it was dealt with. The Pub/Sub adapter
// is in pubsub-feed.ts; the unit tests drive the session through a fake.

export interface FeedMessage {
  readonly id: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly data: Buffer;
}

export type FeedVerdict = 'ack' | 'nack';

export interface FeedHandle {
  close(): Promise<void>;
}

export interface SnapshotFeed {
  /**
   * Starts pulling `subscription` (a full `projects/…/subscriptions/…` name). `onClosed` is called once if
   * the pull ends by itself (a non-retryable error such as a deleted subscription), never after close().
   */
  open(
    subscription: string,
    handle: (m: FeedMessage) => Promise<FeedVerdict>,
    onClosed: (err: Error | undefined) => void,
  ): FeedHandle;
}
