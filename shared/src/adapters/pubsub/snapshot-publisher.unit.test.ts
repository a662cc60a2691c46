// The snapshot publisher's deadline and its ordering key: a snapshot pass is not held in the client
// library's retries (up to 10 minutes, past the planner lock) while Pub/Sub is unreachable; a failure — in
// time or after the deadline, when the pass has moved on — resumes the worker's ordering key, as the
// library asks; and a worker's snapshots are not queued behind one still unconfirmed. The library's Topic
// is stubbed; the emulator path is test/integration/gateway-subscription-gone.test.ts.
import type { PubSub } from '@google-cloud/pubsub';
import { describe, expect, it, vi } from 'vitest';
import { snapshot } from '../../../../functions/gateway/src/control/fakes.js';
import { mayStillBeSent } from '../../ports/publish-error.js';
import { DEFAULT_PUBLISH_DEADLINE_MS } from './publisher.js';
import { PubSubSnapshotPublisher } from './snapshot-publisher.js';

function stubbedTopic(answers: Array<Promise<string>>) {
  const resumed: string[] = [];
  const keys: string[] = [];
  const topic = {
    publishMessage: (m: { orderingKey: string }) => {
      keys.push(m.orderingKey);
      return answers.shift()!;
    },
    resumePublishing: (key: string) => resumed.push(key),
  };
  return { pubsub: { topic: () => topic } as unknown as PubSub, resumed, keys };
}

const never = () => new Promise<string>(() => {});

describe('PubSubSnapshotPublisher', () => {
  it('publishes under the worker id as ordering key and answers the message id', async () => {
    const t = stubbedTopic([Promise.resolve('id-1')]);
    const publisher = new PubSubSnapshotPublisher(t.pubsub, 'gateway-snapshots', { deadlineMs: 50 });
    expect(await publisher.publish(snapshot(1, ['p-a'], 1, 'gw-7'))).toBe('id-1');
    expect(t.keys).toEqual(['gw-7']);
    expect(t.resumed).toEqual([]);
  });

  it('a confirmation that never comes is unconfirmed at the deadline; a later failure resumes the key', async () => {
    let fail!: (err: Error) => void;
    const late = new Promise<string>((_, reject) => (fail = reject));
    const t = stubbedTopic([late]);
    const publisher = new PubSubSnapshotPublisher(t.pubsub, 'gateway-snapshots', { deadlineMs: 50 });
    const failure = await publisher.publish(snapshot(2, ['p-a'], 1, 'gw-7')).catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'unconfirmed' });
    expect(String((failure as Error).message)).toMatch(/snapshot 2 for gw-7/);
    expect(mayStillBeSent(failure)).toBe(true);
    expect(t.resumed).toEqual([]);
    fail(new Error('given up by the library, long after')); // vitest fails the run on an unhandled rejection
    await new Promise((r) => setImmediate(r));
    expect(t.resumed).toEqual(['gw-7']);
  });

  it("while an unconfirmed publish is in the library's hands, the worker's next ones are refused, not queued", async () => {
    // Queued behind a stuck publish, each pass's copy waited in the key's next batch, which passed Pub/Sub's
    // 10 MB request limit once the stuck one ended (@google-cloud/pubsub 5 adds to a batch until 9 MiB).
    let confirm!: (id: string) => void;
    const stuck = new Promise<string>((r) => (confirm = r));
    const t = stubbedTopic([stuck, Promise.resolve('id-other'), Promise.resolve('id-3')]);
    const publisher = new PubSubSnapshotPublisher(t.pubsub, 'gateway-snapshots', { deadlineMs: 50 });
    await expect(publisher.publish(snapshot(1, ['p-a'], 1, 'gw-7'))).rejects.toMatchObject({
      kind: 'unconfirmed',
    });
    const refused = await publisher.publish(snapshot(2, ['p-a'], 1, 'gw-7')).catch((e: unknown) => e);
    expect(refused).toMatchObject({ kind: 'unavailable' });
    expect(String((refused as Error).message)).toMatch(/earlier one is still not confirmed/);
    // Another worker's key is not held up.
    expect(await publisher.publish(snapshot(1, ['p-b'], 1, 'gw-8'))).toBe('id-other');
    expect(t.keys).toEqual(['gw-7', 'gw-8']);
    confirm('id-1');
    await new Promise((r) => setImmediate(r));
    expect(await publisher.publish(snapshot(3, ['p-a'], 1, 'gw-7'))).toBe('id-3');
    expect(t.keys).toEqual(['gw-7', 'gw-8', 'gw-7']);
  });

  it('a refusal within the deadline is unavailable and resumes the key first', async () => {
    const t = stubbedTopic([Promise.reject(new Error('9 FAILED_PRECONDITION'))]);
    const publisher = new PubSubSnapshotPublisher(t.pubsub, 'gateway-snapshots', { deadlineMs: 50 });
    const failure = await publisher.publish(snapshot(3, ['p-a'], 1, 'gw-7')).catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'unavailable' });
    expect(mayStillBeSent(failure)).toBe(false);
    expect(t.resumed).toEqual(['gw-7']);
  });

  it('by default a publish is answered within DEFAULT_PUBLISH_DEADLINE_MS', async () => {
    vi.useFakeTimers();
    try {
      const publisher = new PubSubSnapshotPublisher(stubbedTopic([never()]).pubsub);
      let settled = false;
      const failure = publisher.publish(snapshot(4, ['p-a'])).catch((e: unknown) => e);
      void failure.then(() => {
        settled = true;
      });
      await vi.advanceTimersByTimeAsync(DEFAULT_PUBLISH_DEADLINE_MS - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await failure).toMatchObject({ kind: 'unconfirmed' });
    } finally {
      vi.useRealTimers();
    }
  });
});
