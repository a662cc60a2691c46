// The snapshot function's subscription retention against the Firestore and Pub/Sub emulators
// (functions/snapshot/src/subscription-retention.ts, the cursor in worker-retention-store.ts, the Pub/Sub
// reaper): a worker's snapshot subscription is deleted once its session ended more than the view horizon
// ago — every subscription on gateway-snapshots is billed for every message of the topic, filtered or
// not — and only once (the cursor); a live or recently lapsed worker keeps its own; one already gone is
// done; and a worker that comes back registers and gets it made again by the same API instance.
import { Firestore } from '@google-cloud/firestore';
import type { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  retireWorkerSubscriptions,
  SUBSCRIPTION_PAGES_PER_TICK,
} from '../../functions/snapshot/src/subscription-retention.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { FirestoreWorkerRetentionStore } from '../../shared/src/adapters/firestore/worker-retention-store.js';
import { FirestoreWorkerStore } from '../../shared/src/adapters/firestore/worker-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { PubSubWorkerSubscriptions } from '../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { PubSubSubscriptionReaper } from '../../shared/src/adapters/pubsub/subscription-reaper.js';
import { workerSubscriptionName } from '../../shared/src/adapters/pubsub/worker-subscription.js';
import { DEFAULT_WORKER_SETTINGS } from '../../shared/src/domain/workers/settings.js';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { clearProject, releaseProject, testProjectId } from '../support/emulators.js';
import { record } from '../support/worker-records.js';

const projectId = testProjectId('demo-subret');
const db = new Firestore({ projectId });
const workers = new FirestoreWorkerStore(db);
let pubsub: PubSub;
let api: PubSubWorkerSubscriptions;

const T0 = new Date('2026-12-01T12:00:00Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const ago = (ms: number) => new Date(T0.getTime() - ms);
const HORIZON = DEFAULT_WORKER_SETTINGS.viewHorizonMs; // an hour

beforeAll(() => {
  pubsub = createPubSub(projectId, process.env.PUBSUB_EMULATOR_HOST);
  api = new PubSubWorkerSubscriptions(pubsub, projectId); // one API instance for every registration
});
beforeEach(async () => {
  await clearProject(projectId);
  await pubsub.createTopic(GATEWAY_SNAPSHOTS_TOPIC);
});
afterAll(async () => {
  await db.terminate();
  await pubsub?.close();
  await releaseProject(projectId);
});

/** A worker registered (its subscription made by the API) whose session ends at `endsAt`. */
async function worker(id: string, endsAt: Date, o: { subscription?: boolean } = {}) {
  if (o.subscription ?? true) await api.ensure(id);
  const stored = await workers.get(id);
  await workers.put(record(id, endsAt), stored?.token ?? null);
}

const exists = async (id: string) => (await pubsub.subscription(workerSubscriptionName(id)).exists())[0];

/** The real reaper, counting the deletions it is asked for. */
class CountingReaper extends PubSubSubscriptionReaper {
  asked: string[] = [];
  override remove(workerId: string): Promise<boolean> {
    this.asked.push(workerId);
    return super.remove(workerId);
  }
}

function tick(clock: ManualClock, reaper: CountingReaper, batch = 20) {
  const log = memoryLogger();
  const deps = {
    retired: new FirestoreWorkerRetentionStore(db),
    clock,
    log,
    settings: DEFAULT_WORKER_SETTINGS,
    retention: { afterMs: 7 * 86_400_000, batch },
  };
  return retireWorkerSubscriptions(deps, reaper).then((counts) => ({ counts, log }));
}

describe('the subscription retention', () => {
  it('deletes the subscriptions of workers gone past the view horizon, once; the others stay', async () => {
    await worker('gw-live', new Date(T0.getTime() + 30_000));
    await worker('gw-recent', ago(HORIZON - MIN)); // lapsed, still in view
    await worker('gw-gone', ago(HORIZON + 10 * MIN));
    await worker('gw-gone-2', ago(3 * HOUR));
    await worker('gw-expired', ago(HORIZON + 20 * MIN), { subscription: false }); // Pub/Sub deleted it
    await worker('gw-ancient', ago(3 * 86_400_000)); // past Pub/Sub's expiry: not looked at
    const clock = new ManualClock(T0);
    const reaper = new CountingReaper(pubsub);

    const { counts, log } = await tick(clock, reaper);
    expect(counts).toEqual({ deleted: 2, failures: 0 });
    // In order of session end; the one already gone is done too.
    expect(reaper.asked).toEqual(['gw-gone-2', 'gw-expired', 'gw-gone']);
    expect(await exists('gw-gone')).toBe(false);
    expect(await exists('gw-gone-2')).toBe(false);
    for (const id of ['gw-live', 'gw-recent', 'gw-ancient']) expect(await exists(id), id).toBe(true);
    expect(log.lines).toEqual([
      expect.objectContaining({
        event: 'gateway.worker_subscriptions_deleted',
        workers: ['gw-gone-2', 'gw-gone'],
      }),
    ]);
    const cursor = await db.collection(Collections.cursors).doc('worker-subscriptions').get();
    expect(cursor.get('workerId')).toBe('gw-gone');

    // The next tick asks for nothing: each session end is dealt with once.
    reaper.asked = [];
    expect((await tick(clock, reaper)).counts).toEqual({ deleted: 0, failures: 0 });
    expect(reaper.asked).toEqual([]);

    // The recently lapsed one, once it passes the horizon.
    clock.advance(2 * MIN);
    expect((await tick(clock, reaper)).counts).toEqual({ deleted: 1, failures: 0 });
    expect(reaper.asked).toEqual(['gw-recent']);
    expect(await exists('gw-recent')).toBe(false);
    expect(await exists('gw-live')).toBe(true);
  });

  it('a worker document whose id makes no subscription name (made by hand) is nothing to delete: the cursor moves past it', async () => {
    // Pub/Sub refuses the name (3 INVALID_ARGUMENT), which the reaper takes for "nothing there" — else
    // the retention would stop at this worker every tick, and no subscription after it would ever go.
    await worker('Bad Name!', ago(HORIZON + 10 * MIN), { subscription: false });
    await worker('gw-after', ago(HORIZON + 5 * MIN));
    const clock = new ManualClock(T0);
    const reaper = new CountingReaper(pubsub);
    expect((await tick(clock, reaper)).counts).toEqual({ deleted: 1, failures: 0 });
    expect(reaper.asked).toEqual(['Bad Name!', 'gw-after']);
    expect(await exists('gw-after')).toBe(false);
    const cursor = await db.collection(Collections.cursors).doc('worker-subscriptions').get();
    expect(cursor.get('workerId')).toBe('gw-after');
  });

  it('a worker back after its subscription was deleted registers and the same API instance makes it again', async () => {
    await worker('gw-back', ago(HORIZON + MIN));
    const clock = new ManualClock(T0);
    const reaper = new CountingReaper(pubsub);
    await tick(clock, reaper);
    expect(await exists('gw-back')).toBe(false); // its pull would end NOT_FOUND, and it registers again

    await worker('gw-back', new Date(T0.getTime() + 30_000)); // registration: ensure() on the same instance
    expect(await exists('gw-back')).toBe(true);

    // Its new session, once over and past the horizon, is found again behind the cursor.
    clock.advance(HORIZON + 2 * MIN);
    reaper.asked = [];
    expect((await tick(clock, reaper)).counts).toEqual({ deleted: 1, failures: 0 });
    expect(reaper.asked).toEqual(['gw-back']);
    expect(await exists('gw-back')).toBe(false);
  });

  it('pages through sessions that ended at the same instant, a batch a page, across ticks, missing none', async () => {
    const same = ago(2 * HOUR);
    const ids = Array.from(
      { length: SUBSCRIPTION_PAGES_PER_TICK + 2 },
      (_, i) => `gw-${String(i).padStart(2, '0')}`,
    );
    for (const id of ids) await worker(id, same);
    const clock = new ManualClock(T0);
    const reaper = new CountingReaper(pubsub);
    // Full pages of one: as many as a tick takes, then the rest from the saved cursor the next tick.
    expect((await tick(clock, reaper, 1)).counts.deleted).toBe(SUBSCRIPTION_PAGES_PER_TICK);
    expect((await tick(clock, reaper, 1)).counts.deleted).toBe(2);
    expect(reaper.asked).toEqual(ids);
    expect((await tick(clock, reaper, 1)).counts.deleted).toBe(0);
    expect(reaper.asked).toHaveLength(ids.length);
  });
});
