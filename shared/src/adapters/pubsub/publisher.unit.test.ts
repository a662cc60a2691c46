// The publish deadline (PublisherOptions.deadlineMs): a caller answering someone is not held in the client
// library's retries while Pub/Sub is unreachable. The library's Topic is stubbed: no emulator is needed to
// see that a confirmation which never comes is answered `unconfirmed` at the deadline
// (the library may still send it), and a refusal `unavailable`.
import type { PubSub } from '@google-cloud/pubsub';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { mayStillBeSent } from '../../ports/publish-error.js';
import { DEFAULT_PUBLISH_DEADLINE_MS, PublishError, PubSubPublisher } from './publisher.js';

const Payload = z.object({ proxy: z.string() }).strict();

function pubsubAnswering(publishMessage: () => Promise<string>): PubSub {
  return { topic: () => ({ publishMessage }) } as unknown as PubSub;
}

describe('PubSubPublisher deadline', () => {
  it('a confirmation that never comes is answered unconfirmed at the deadline: it may still be sent', async () => {
    const publisher = new PubSubPublisher(
      pubsubAnswering(() => new Promise<string>(() => {})),
      { deadlineMs: 50 },
    );
    const started = Date.now();
    const failure = await publisher.publish('t', Payload, { proxy: 'p1' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PublishError);
    expect(failure).toMatchObject({ kind: 'unconfirmed' });
    expect(String((failure as Error).cause)).toMatch(/not confirmed within 50 ms/);
    expect(mayStillBeSent(failure)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a confirmation within the deadline is the message id; a late failure is not unhandled', async () => {
    let fail!: (err: Error) => void;
    const late = new Promise<string>((_, reject) => (fail = reject));
    const answers = [Promise.resolve('id-1'), late];
    const publisher = new PubSubPublisher(
      pubsubAnswering(() => answers.shift()!),
      { deadlineMs: 50 },
    );
    expect(await publisher.publish('t', Payload, { proxy: 'p1' })).toBe('id-1');
    await expect(publisher.publish('t', Payload, { proxy: 'p2' })).rejects.toMatchObject({
      kind: 'unconfirmed',
    });
    fail(new Error('given up by the library, long after')); // vitest fails the run on an unhandled rejection
    await new Promise((r) => setImmediate(r));
  });

  it('by default a publish is answered within DEFAULT_PUBLISH_DEADLINE_MS', async () => {
    vi.useFakeTimers();
    try {
      const publisher = new PubSubPublisher(pubsubAnswering(() => new Promise<string>(() => {})));
      const failure = publisher.publish('t', Payload, { proxy: 'p1' }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(DEFAULT_PUBLISH_DEADLINE_MS - 1);
      let settled = false;
      void failure.then(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(0);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await failure).toMatchObject({ kind: 'unconfirmed' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('a refusal within the deadline is unavailable: not sent', async () => {
    const publisher = new PubSubPublisher(
      pubsubAnswering(() => Promise.reject(new Error('9 FAILED_PRECONDITION'))),
      { deadlineMs: 50 },
    );
    const failure = await publisher.publish('t', Payload, { proxy: 'p1' }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'unavailable' });
    expect(mayStillBeSent(failure)).toBe(false);
  });

  it('with the deadline null it waits as long as the library does', async () => {
    let confirm!: (id: string) => void;
    const publisher = new PubSubPublisher(
      pubsubAnswering(() => new Promise<string>((r) => (confirm = r))),
      { deadlineMs: null },
    );
    const sent = publisher.publish('t', Payload, { proxy: 'p1' });
    await new Promise((r) => setTimeout(r, 80));
    confirm('id-2');
    expect(await sent).toBe('id-2');
  });
});
