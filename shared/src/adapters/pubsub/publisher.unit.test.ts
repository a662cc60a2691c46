// The publish deadline (PublisherOptions.deadlineMs): a caller answering someone is not held in the client
// library's retries while Pub/Sub is unreachable. The library's Topic is stubbed: no emulator is needed to
// see that a confirmation which never comes is answered `unavailable` at the deadline.
import type { PubSub } from '@google-cloud/pubsub';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { DEFAULT_PUBLISH_DEADLINE_MS, PublishError, PubSubPublisher } from './publisher.js';

const Payload = z.object({ proxy: z.string() }).strict();

function pubsubAnswering(publishMessage: () => Promise<string>): PubSub {
  return { topic: () => ({ publishMessage }) } as unknown as PubSub;
}

describe('PubSubPublisher deadline', () => {
  it('a confirmation that never comes is answered unavailable at the deadline', async () => {
    const publisher = new PubSubPublisher(
      pubsubAnswering(() => new Promise<string>(() => {})),
      { deadlineMs: 50 },
    );
    const started = Date.now();
    const failure = await publisher.publish('t', Payload, { proxy: 'p1' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PublishError);
    expect(failure).toMatchObject({ kind: 'unavailable' });
    expect(String((failure as Error).cause)).toMatch(/not confirmed within 50 ms/);
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
      kind: 'unavailable',
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
      expect(await failure).toMatchObject({ kind: 'unavailable' });
    } finally {
      vi.useRealTimers();
    }
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
