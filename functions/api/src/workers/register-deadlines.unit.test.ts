// Registration against a Pub/Sub that stalls, as wired for production (buildWorkersApi): the gateway gives
// up on a control call at 10 s (GATEWAY_CONTROL_TIMEOUT_MS), so registration must answer well inside it.
// A pass request Pub/Sub takes but never confirms is best effort (the tick runs the pass): the session is
// handed out anyway, and a retried (resumed) registration is not held again. A subscription Pub/Sub's admin
// API never answers (the create, or the read of one that already exists) is a 503 unavailable +
// Retry-After the gateway retries, never a "no answer". Fake timers: the bounds are measured on them.
import type { Firestore } from '@google-cloud/firestore';
import type { PubSub } from '@google-cloud/pubsub';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import type { Versioned, WorkerRecord } from '../../../../shared/src/ports/workers.js';
import type { Authenticator } from '../auth/authenticator.js';
import { loadWorkersApiConfig } from './config.js';
import { workerRoutes } from './routes.js';
import { buildWorkersApi } from './wiring.js';

const never = () => new Promise<never>(() => {});

type Admin = 'answers' | 'never' | 'exists-read-never';

/**
 * A Pub/Sub whose publishes are taken and never confirmed; its admin calls as `admin` says (the create
 * answers, never answers, or says ALREADY_EXISTS and the read of the existing one never answers).
 */
function stalledPubSub(admin: Admin) {
  const published: unknown[] = [];
  const pubsub = {
    topic: () => ({
      publishMessage: (m: unknown) => {
        published.push(m);
        return never();
      },
      createSubscription: async () => {
        if (admin === 'never') return never();
        if (admin === 'exists-read-never') throw Object.assign(new Error('ALREADY_EXISTS'), { code: 6 });
        return [{}];
      },
    }),
    subscription: () => ({ getMetadata: never }),
  } as unknown as PubSub;
  return { pubsub, published };
}

function api(admin: Admin) {
  const { pubsub, published } = stalledPubSub(admin);
  const log = memoryLogger();
  const deps = buildWorkersApi({
    firestore: {} as Firestore,
    pubsub,
    projectId: 'p',
    config: loadWorkersApiConfig({ PROXYPLANE_LOCAL: '1' }),
    adminAuth: {} as Authenticator,
    clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
    log,
  });
  // In-memory worker and ownership stores: only Pub/Sub stalls here.
  let stored: Versioned<WorkerRecord> | null = null;
  let n = 0;
  deps.workers = {
    ...deps.workers,
    get: async () => stored,
    put: async (value: WorkerRecord) => {
      stored = { value, token: String(++n) };
    },
  } as typeof deps.workers;
  deps.ownership = { epoch: async () => 0 } as unknown as typeof deps.ownership;
  const app = workerRoutes(deps);
  /** Registers, advancing the fake clock until it is answered; `ms`: the fake time it took. */
  const register = async () => {
    const t0 = Date.now();
    let done = false;
    const answer = Promise.resolve(
      app.request('/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          workerId: 'gw-1',
          instanceId: 'i-1',
          zone: 'z-a',
          supportedProtocolVersion: 1,
        }),
      }),
    ).finally(() => {
      done = true;
    });
    for (let waited = 0; !done && waited < 15_000; waited += 100) await vi.advanceTimersByTimeAsync(100);
    const res = await answer;
    return { res, ms: Date.now() - t0 };
  };
  return { register, published, log };
}

describe('registration while Pub/Sub stalls', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a pass request never confirmed: 200 with a session at its 2 s bound, and again when retried (resumed)', async () => {
    const { register, published } = api('answers');
    const first = await register();
    expect(first.res.status).toBe(200);
    expect(first.ms).toBeGreaterThanOrEqual(2_000);
    expect(first.ms).toBeLessThanOrEqual(2_100);
    const body = await first.res.json();
    expect(body).toMatchObject({ resumed: false, snapshotSubscription: expect.any(String) });

    const again = await register();
    expect(again.res.status).toBe(200);
    expect(again.ms).toBeGreaterThanOrEqual(2_000);
    expect(again.ms).toBeLessThanOrEqual(2_100);
    expect(await again.res.json()).toMatchObject({ resumed: true, sessionId: body.sessionId });
    expect(published).toHaveLength(2); // each asked for its pass; neither waited past the bound
  });

  it.each([
    ['never made', 'never'],
    ['found already there (ALREADY_EXISTS), its read never answered', 'exists-read-never'],
  ] as const)('the subscription %s: 503 unavailable with Retry-After at its 3 s bound', async (_, admin) => {
    const { register, published } = api(admin);
    const { res, ms } = await register();
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
    expect(ms).toBeGreaterThanOrEqual(3_000);
    expect(ms).toBeLessThanOrEqual(3_100);
    expect(published).toHaveLength(0);
  });
});
