// The ensure's bound ends the library's calls too: each admin call is sent with the bound as its own gax
// deadline and no retries, so a registration given up at the bound leaves no create (or read) running on
// in the library's retries for up to 10 min.
import type { PubSub } from '@google-cloud/pubsub';
import { describe, expect, it, vi } from 'vitest';
import { withRequestBudget } from '../deadline.js';
import { PubSubWorkerSubscriptions, workerFilter } from './snapshot-subscriptions.js';

function fake(create: 'made' | 'exists') {
  const calls: { create?: Record<string, unknown>; metadata?: unknown } = {};
  const pubsub = {
    topic: (topic: string) => ({
      createSubscription: async (_name: string, options: Record<string, unknown>) => {
        calls.create = options;
        if (create === 'exists') throw Object.assign(new Error('exists'), { code: 6 });
        return [{}];
      },
      name: topic,
    }),
    subscription: () => ({
      getMetadata: async (gaxOpts?: unknown) => {
        calls.metadata = gaxOpts;
        return [{ topic: 'projects/p/topics/gateway-snapshots', filter: workerFilter('gw-1') }];
      },
    }),
  } as unknown as PubSub;
  return { pubsub, calls };
}

describe('PubSubWorkerSubscriptions call options', () => {
  it('with a deadline: create and getMetadata each carry it as their own timeout, unretried', async () => {
    const { pubsub, calls } = fake('exists');
    const subs = new PubSubWorkerSubscriptions(pubsub, 'p', 'gateway-snapshots', { deadlineMs: 3_000 });
    await expect(subs.ensure('gw-1')).resolves.toMatch(/subscriptions\//);
    expect(calls.create).toMatchObject({ gaxOpts: { timeout: 3_000, retry: null } });
    expect(calls.metadata).toEqual({ timeout: 3_000, retry: null });
  });

  it('without one: the library defaults (no gaxOpts)', async () => {
    const { pubsub, calls } = fake('made');
    const subs = new PubSubWorkerSubscriptions(pubsub, 'p');
    await subs.ensure('gw-1');
    expect(calls.create).not.toHaveProperty('gaxOpts');
  });

  it('a create failing after the bound is dropped by the bound (no unhandled rejection)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const pubsub = {
        topic: () => ({
          createSubscription: () =>
            new Promise((_, reject) =>
              setTimeout(() => reject(Object.assign(new Error('late'), { code: 14 })), 5_000),
            ),
        }),
      } as unknown as PubSub;
      const subs = new PubSubWorkerSubscriptions(pubsub, 'p', 'gateway-snapshots', { deadlineMs: 3_000 });
      const ensured = subs.ensure('gw-1');
      const outcome = expect(ensured).rejects.toMatchObject({ kind: 'unavailable' });
      await vi.advanceTimersByTimeAsync(3_000);
      await outcome;
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      await vi.advanceTimersByTimeAsync(2_000);
      await new Promise((r) => setImmediate(r));
      process.off('unhandledRejection', onUnhandled);
      expect(unhandled).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("inside a request budget: the bound (and each call's own timeout) is what is left; spent, nothing is asked", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const { pubsub, calls } = fake('exists');
      const subs = new PubSubWorkerSubscriptions(pubsub, 'p', 'gateway-snapshots', { deadlineMs: 3_000 });
      await withRequestBudget(1_200, () => subs.ensure('gw-1'));
      expect(calls.create).toMatchObject({ gaxOpts: { timeout: 1_200, retry: null } });
      expect(calls.metadata).toEqual({ timeout: 1_200, retry: null });

      const spent = fake('made');
      const late = new PubSubWorkerSubscriptions(spent.pubsub, 'p', 'gateway-snapshots', {
        deadlineMs: 3_000,
      });
      const ensured = withRequestBudget(1_000, async () => {
        await new Promise((r) => setTimeout(r, 1_000));
        return late.ensure('gw-1');
      });
      const outcome = expect(ensured).rejects.toMatchObject({ kind: 'unavailable' });
      await vi.advanceTimersByTimeAsync(1_000);
      await outcome;
      expect(spent.calls.create).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });
});
