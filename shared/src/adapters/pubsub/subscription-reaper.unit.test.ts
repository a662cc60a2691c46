// A subscription delete is bounded: the library's own retry settings let one delete run for ten minutes
// in an admin-API brownout, past the snapshot tick's 120 s timeout (the tick killed and redelivered, its
// run unrecorded).
import type { PubSub } from '@google-cloud/pubsub';
import { describe, expect, it } from 'vitest';
import { PubSubSubscriptionReaper } from './subscription-reaper.js';

const pubsub = (deleted: () => Promise<unknown>, calls: unknown[] = []) =>
  ({
    subscription: (name: string) => ({
      delete: (opts: unknown) => {
        calls.push({ name, opts });
        return deleted();
      },
    }),
  }) as unknown as PubSub;

describe('PubSubSubscriptionReaper', () => {
  it('gives up on a delete that does not answer within its bound, and bounds the call itself', async () => {
    const calls: unknown[] = [];
    const reaper = new PubSubSubscriptionReaper(
      pubsub(() => new Promise(() => {}), calls),
      50,
    );
    const started = Date.now();
    await expect(reaper.remove('gw-1')).rejects.toThrow(/no answer within 50 ms/);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(calls).toEqual([
      { name: 'gateway-snapshots--worker-gw-1', opts: expect.objectContaining({ timeout: 50 }) },
    ]);
  });

  it('takes a name Pub/Sub refuses (a worker document made by hand) for nothing to delete', async () => {
    const invalid = Object.assign(new Error('3 INVALID_ARGUMENT: invalid resource name'), { code: 3 });
    const reaper = new PubSubSubscriptionReaper(pubsub(() => Promise.reject(invalid)));
    await expect(reaper.remove('Bad Name')).resolves.toBe(false);
  });

  it('takes a subscription already gone for done, and says it deleted nothing', async () => {
    const reaper = new PubSubSubscriptionReaper(
      pubsub(() => Promise.reject(Object.assign(new Error('gone'), { code: 5 }))),
    );
    await expect(reaper.remove('gw-1')).resolves.toBe(false);
  });
});
