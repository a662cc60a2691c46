// A pass request is best effort (callers log its failure), but it must not hold a worker call past the
// call's budget (withRequestBudget): waited for no longer than what is left, and not sent once it is spent.
import type { PubSub } from '@google-cloud/pubsub';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { withRequestBudget } from '../deadline.js';
import { PubSubPublisher } from './publisher.js';
import { PubSubSnapshotRequester } from './snapshot-requester.js';

/** Publishes confirmed after 1.9 s (inside the publisher's 2 s deadline). */
function requester() {
  const published: unknown[] = [];
  const pubsub = {
    topic: () => ({
      publishMessage: (m: unknown) => {
        published.push(m);
        return new Promise((r) => setTimeout(() => r('id'), 1_900));
      },
    }),
  } as unknown as PubSub;
  return {
    requester: new PubSubSnapshotRequester(new PubSubPublisher(pubsub, { deadlineMs: 2_000 })),
    published,
  };
}

describe('PubSubSnapshotRequester inside a request budget', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  it('outside one: waits for the confirmation (1.9 s)', async () => {
    const { requester: r } = requester();
    const done = r.request({ reason: 'register', workerId: 'gw-1' });
    await vi.advanceTimersByTimeAsync(1_900);
    await expect(done).resolves.toBeUndefined();
  });

  it('500 ms left: unconfirmed at 500 ms', async () => {
    const { requester: r, published } = requester();
    const done = withRequestBudget(500, () => r.request({ reason: 'register', workerId: 'gw-1' }));
    const outcome = expect(done).rejects.toMatchObject({ kind: 'unconfirmed' });
    await vi.advanceTimersByTimeAsync(500);
    await outcome;
    expect(published).toHaveLength(1);
  });

  it('spent: not sent', async () => {
    const { requester: r, published } = requester();
    const done = withRequestBudget(100, async () => {
      await new Promise((res) => setTimeout(res, 100));
      return r.request({ reason: 'register', workerId: 'gw-1' });
    });
    const outcome = expect(done).rejects.toMatchObject({ kind: 'unavailable' });
    await vi.advanceTimersByTimeAsync(100);
    await outcome;
    expect(published).toHaveLength(0);
  });
});
