// Publishes a message payload (a zod schema from shared/src/messages) as JSON. The payload is validated
// before it leaves against the strict schema publishers send with, so a consumer's decodePubSubCloudEvent
// with its received schema (the same, unknown top-level fields dropped rather than refused) accepts it;
// the data is never empty, because the functions-framework does not convert a push without data into a
// CloudEvent (recipes §1, caveat 2).
import type { PubSub, Topic } from '@google-cloud/pubsub';
import type { z } from 'zod';
import { PublishError } from '../../ports/publish-error.js';
import { withDeadline } from '../deadline.js';
import { currentTrace, formatTraceparent, TRACEPARENT } from '../log/trace-context.js';

export { PublishError };

/**
 * How long a publish waits for Pub/Sub's confirmation unless its publisher says otherwise. The client
 * library retries a publish for up to 10 minutes: a function held that long by a Pub/Sub brownout runs
 * past its own timeout (the probe past its run budget, with no run recorded), where answered
 * `unavailable` it takes its own failure path (logged, retried by the next tick or redelivery).
 */
export const DEFAULT_PUBLISH_DEADLINE_MS = 10_000;

export interface PublisherOptions {
  /**
   * How long a publish may wait for Pub/Sub's confirmation before it is answered `unconfirmed` (the
   * message may still go out: the client library keeps retrying it). Default
   * DEFAULT_PUBLISH_DEADLINE_MS; null: as long as the library takes.
   */
  deadlineMs?: number | null;
}

export class PubSubPublisher {
  private readonly topics = new Map<string, Topic>();

  constructor(
    private readonly pubsub: PubSub,
    private readonly options: PublisherOptions = {},
  ) {}

  /**
   * Returns the message id. Throws PublishError: `invalid_payload` (a bug), `unavailable` (refused: not
   * sent), `unconfirmed` (the deadline passed: it may still be sent).
   */
  async publish<S extends z.ZodType>(
    topic: string,
    schema: S,
    payload: z.input<S>,
    attributes: Record<string, string> = {},
  ): Promise<string> {
    const parsed = schema.safeParse(payload);
    if (!parsed.success) {
      throw new PublishError('invalid_payload', `payload for ${topic} does not match its schema`, {
        cause: parsed.error,
      });
    }
    return this.publishRaw(topic, Buffer.from(JSON.stringify(parsed.data)), attributes);
  }

  /** Publishes bytes as they are (what a Cloud Scheduler Pub/Sub target sends). */
  async publishRaw(topic: string, data: Buffer, attributes: Record<string, string> = {}): Promise<string> {
    if (data.length === 0) throw new PublishError('invalid_payload', `refusing an empty message on ${topic}`);
    // Published inside a trace (an API request's, a delivery's): the message carries it on, so the work it
    // triggers logs under the same trace. An attribute the caller set is its own.
    const trace = currentTrace();
    const sent = this.topic(topic).publishMessage({
      data,
      attributes:
        trace && !(TRACEPARENT in attributes)
          ? { ...attributes, [TRACEPARENT]: formatTraceparent(trace) }
          : attributes,
    });
    const deadlineMs =
      this.options.deadlineMs === undefined ? DEFAULT_PUBLISH_DEADLINE_MS : this.options.deadlineMs;
    return confirmed(sent, deadlineMs, `publishing to ${topic}`);
  }

  private topic(name: string): Topic {
    let topic = this.topics.get(name);
    if (!topic) {
      topic = this.pubsub.topic(name);
      this.topics.set(name, topic);
    }
    return topic;
  }
}

/**
 * The message id `sent` resolves to, waited for at most `deadlineMs` (null: as long as the library takes).
 * Throws PublishError `unconfirmed` at the deadline (the library may still send it) and `unavailable` when
 * the library gave up first (not sent). `what` begins the error's message.
 */
export async function confirmed(
  sent: Promise<string>,
  deadlineMs: number | null,
  what: string,
): Promise<string> {
  try {
    return await (deadlineMs === null ? sent : withinDeadline(sent, deadlineMs));
  } catch (err) {
    if (err instanceof Unconfirmed)
      throw new PublishError('unconfirmed', `${what}: ${err.message}`, { cause: err });
    throw new PublishError('unavailable', `${what} failed`, { cause: err });
  }
}

/** `sent`, or a rejection once `ms` have passed without it (what it does later is nobody's to handle). */
class Unconfirmed extends Error {}

const withinDeadline = <T>(sent: Promise<T>, ms: number): Promise<T> =>
  withDeadline(sent, ms, () => new Unconfirmed(`not confirmed within ${ms} ms; it may still go out`));
