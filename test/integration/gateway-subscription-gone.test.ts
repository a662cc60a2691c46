// The gateway's snapshot subscription deleted under it (by the snapshot function's retention, by hand, or
// by Pub/Sub after a day without use): the real streaming pull (PubSubSnapshotFeed on the emulator) ends
// with NOT_FOUND, and reopening it can only fail the same way. Only registration makes the subscription
// (the API's PubSubWorkerSubscriptions.ensure, on the same API instance that made it), so the session
// registers again and fetches the latest full snapshot — what was published while there was no
// subscription is lost. Without that the worker went stale for good while its reports
// kept its session, and its proxies, alive. The control client is a stand-in that makes the subscription
// as the API does and serves the latest snapshot; the pull, the worker and the session are the real ones.
import type { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlAnswer, ControlClient } from '../../functions/gateway/src/control/client.js';
import { registration, snapshot } from '../../functions/gateway/src/control/fakes.js';
import { PubSubSnapshotFeed } from '../../functions/gateway/src/control/pubsub-feed.js';
import { ControllerSession } from '../../functions/gateway/src/control/session.js';
import { CredentialCache, StaticCredentialResolver } from '../../functions/gateway/src/credentials.js';
import { jsonLogger } from '../../functions/gateway/src/logger.js';
import { GatewayWorker } from '../../functions/gateway/src/worker.js';
import { createPubSub } from '../../shared/src/adapters/pubsub/client.js';
import { PubSubSnapshotPublisher } from '../../shared/src/adapters/pubsub/snapshot-publisher.js';
import { PubSubWorkerSubscriptions } from '../../shared/src/adapters/pubsub/snapshot-subscriptions.js';
import { workerSubscriptionName } from '../../shared/src/adapters/pubsub/worker-subscription.js';
import type { GatewaySnapshot } from '../../shared/src/messages/gateway-snapshot.js';
import { GATEWAY_SNAPSHOTS_TOPIC } from '../../shared/src/messages/worker-snapshot-request.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { pollUntil } from '../support/poll.js';

const WORKER = 'gw-1'; // the fakes' snapshots are addressed to it
const projectId = testProjectId('demo-subgone');
let pubsub: PubSub;

beforeAll(async () => {
  pubsub = createPubSub(projectId, process.env.PUBSUB_EMULATOR_HOST);
  await pubsub.createTopic(GATEWAY_SNAPSHOTS_TOPIC);
});
afterAll(async () => {
  await pubsub?.close();
  await releaseProject(projectId);
});

/** The API's side, as far as this test needs it: registration makes the subscription, GET serves the latest. */
class StandInApi implements ControlClient {
  registrations = 0;
  latest: GatewaySnapshot | null = null;
  fetched = 0;
  // One instance for every registration, as one API instance serves them: the one that made the
  // subscription is the one the worker comes back to once it is gone.
  private readonly subscriptions = new PubSubWorkerSubscriptions(pubsub, projectId);

  async register(): Promise<ControlAnswer<never>> {
    const path = await this.subscriptions.ensure(WORKER);
    this.registrations++;
    return {
      ok: true,
      body: registration('session-1', {
        resumed: this.registrations > 1,
        protocolVersion: 5,
        snapshotSubscription: path,
      }),
    } as ControlAnswer<never>;
  }
  async ack(_w: string, b: { version: number; epoch: number }): Promise<ControlAnswer<never>> {
    return {
      ok: true,
      body: { acceptedVersion: b.version, acceptedEpoch: b.epoch, unchanged: false },
    } as ControlAnswer<never>;
  }
  async runtime(_w: string, b: { reportSequence: number }): Promise<ControlAnswer<never>> {
    const body = {
      acceptedSequence: b.reportSequence,
      replay: false,
      revokeProxyIds: [],
      reportTtlSeconds: 15,
    };
    return { ok: true, body } as ControlAnswer<never>;
  }
  async outcomes(_w: string, b: { sequence: number }): Promise<ControlAnswer<never>> {
    const body = { acceptedSequence: b.sequence, duplicate: false, recorded: 0, ignored: 0 };
    return { ok: true, body } as ControlAnswer<never>;
  }
  async latestSnapshot(): Promise<ControlAnswer<never>> {
    this.fetched++;
    if (!this.latest) return { ok: false, status: 404, code: 'no_snapshot', message: 'none' };
    return { ok: true, body: this.latest } as ControlAnswer<never>;
  }
}

describe('the snapshot subscription deleted under a running gateway', () => {
  it('is made again by registering, and the snapshot published meanwhile is fetched', async () => {
    const log = jsonLogger('error', () => {});
    const worker = new GatewayWorker({
      credentials: new CredentialCache(new StaticCredentialResolver(), 60_000, () => Date.now()),
      log,
      now: () => Date.now(),
      monotonicNow: () => performance.now(),
      maxStaleAgeMs: Number.POSITIVE_INFINITY,
      workerId: WORKER,
      stickyTableSize: 10,
      outcomeQueueSize: 100,
    });
    const api = new StandInApi();
    const errors: Array<{ code?: unknown }> = [];
    const session = new ControllerSession({
      client: api,
      feed: new PubSubSnapshotFeed(pubsub, { onError: (err) => errors.push(err as { code?: unknown }) }),
      log,
      workerId: WORKER,
      instanceId: 'instance-1',
      zone: 'local',
      monotonicNow: () => performance.now(),
      settings: {
        backoff: { initialMs: 200, maxMs: 1_000 },
        startWaitMs: 20_000,
        firstSnapshotWaitMs: 60_000,
      },
    });
    const publisher = new PubSubSnapshotPublisher(pubsub);
    const publish = async (s: GatewaySnapshot) => {
      api.latest = s;
      await publisher.publish(s);
    };
    try {
      const started = session.source.start(worker);
      session.reporter.start(worker);
      await pollUntil(
        () => api.registrations === 1 || undefined,
        (v) => v === true,
        10_000,
        'registered',
      );
      await publish(snapshot(1, ['p-a', 'p-b']));
      await started;
      expect(worker.snapshot()?.version).toBe(1);

      await pubsub.subscription(workerSubscriptionName(WORKER)).delete();
      await pollUntil(
        () => errors.some((e) => e.code === 5) || undefined,
        (v) => v === true,
        20_000,
        'the pull to end with NOT_FOUND',
      );
      // Published while the subscription does not exist: lost to Pub/Sub.
      await publish(snapshot(2, ['p-a']));
      await pollUntil(
        () => worker.snapshot()?.version === 2 || undefined,
        (v) => v === true,
        20_000,
        'version 2 applied',
      );
      expect(api.registrations).toBeGreaterThanOrEqual(2);
      expect((await pubsub.subscription(workerSubscriptionName(WORKER)).exists())[0]).toBe(true);
      // And the pull works again: the next snapshot arrives on it.
      const fetched = api.fetched;
      await publish(snapshot(3, ['p-a', 'p-b']));
      await pollUntil(
        () => worker.snapshot()?.version === 3 || undefined,
        (v) => v === true,
        20_000,
        'version 3 applied',
      );
      expect(api.fetched).toBe(fetched);
    } finally {
      await session.reporter.stop();
    }
  }, 90_000);
});
