// The pull's watchdogs (session.ts watchPull) go by the max stale age the worker goes stale at: the
// controller's, tightened by a local GATEWAY_MAX_STALE_AGE_SECONDS (settings.maxStaleAgeMs), as the
// worker's own bound is (worker.ts setMaxStaleAge).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadGatewayConfig } from '../config.js';
import { CredentialCache, StaticCredentialResolver } from '../credentials.js';
import { jsonLogger } from '../logger.js';
import { GatewayWorker } from '../worker.js';
import { FakeClient, FakeFeed, feedMessage, snapshot, T0, WORKER } from './fakes.js';
import { ControllerSession } from './session.js';
import { controllerMode } from './wiring.js';

const microtask = () => Promise.resolve();

/** A session and its worker, both with the local bound `localMaxStaleMs`; the controller's is 150 s. */
function harness(localMaxStaleMs: number) {
  const client = new FakeClient();
  const feed = new FakeFeed();
  const log = jsonLogger('error', () => {});
  const worker = new GatewayWorker({
    credentials: new CredentialCache(new StaticCredentialResolver(), 60_000, () => Date.now()),
    log,
    now: () => Date.now(),
    maxStaleAgeMs: localMaxStaleMs,
    workerId: WORKER,
    stickyTableSize: 10,
    outcomeQueueSize: 100,
    pause: microtask,
  });
  const session = new ControllerSession({
    client,
    feed,
    log,
    workerId: WORKER,
    instanceId: 'instance-1',
    zone: 'local',
    random: () => 0,
    settings: { startWaitMs: 60_000, maxStaleAgeMs: localMaxStaleMs },
    pause: microtask,
  });
  return { client, feed, worker, session };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('pull watchdogs under a local max stale age tighter than the controller', () => {
  it('a pull that delivers nothing is fetched for at half the local bound: the worker never goes stale', async () => {
    const h = harness(60_000);
    void h.session.source.start(h.worker).catch(() => {});
    h.session.reporter.start(h.worker);
    await vi.advanceTimersByTimeAsync(0);
    await h.feed.deliver(feedMessage(snapshot(1, ['p-a'])));
    await vi.advanceTimersByTimeAsync(0);
    expect(h.session.session?.registration.maxStaleAgeSeconds).toBe(150);
    h.client.scripts.latestSnapshot.push(
      { ok: true, body: snapshot(2, ['p-a']) },
      { ok: true, body: snapshot(3, ['p-a']) },
    );
    const stale: number[] = [];
    for (let s = 1; s <= 90; s++) {
      await vi.advanceTimersByTimeAsync(1_000);
      h.worker.tick();
      if (h.worker.phase() === 'stale') stale.push(s);
    }
    expect(stale).toEqual([]);
    // At the first report round (every 5 s) past 30 s of quiet — half the local 60 s, not of the 150 s.
    const fetchedAt = h.client.of('latestSnapshot').map((c) => Math.round((c.at - T0) / 1000));
    expect(fetchedAt).toEqual([35, 70]);
    expect(h.worker.snapshot()?.version).toBe(3);
    await h.session.reporter.stop();
  });

  it('controller mode hands GATEWAY_MAX_STALE_AGE_SECONDS to the session (0: the controller’s alone)', async () => {
    const env = {
      CONTROL_PLANE_URL: 'http://127.0.0.1:1',
      GOOGLE_CLOUD_PROJECT: 'demo',
      GATEWAY_WORKER_AUTH: 'none',
      GATEWAY_CLIENT_USERS: 'u:p',
    };
    const local = (seconds: string) => {
      const mode = controllerMode(
        loadGatewayConfig([], { ...env, GATEWAY_MAX_STALE_AGE_SECONDS: seconds }),
        jsonLogger('error', () => {}),
        () => {},
      );
      void mode.close();
      return mode.session.settings.maxStaleAgeMs;
    };
    expect(local('60')).toBe(60_000);
    expect(local('0')).toBe(Number.POSITIVE_INFINITY);
  });
});
