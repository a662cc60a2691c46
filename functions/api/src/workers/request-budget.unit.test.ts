// A worker call against a Firestore (and Pub/Sub) slow on every call, each answering just inside its own
// bound, as wired for production (buildWorkersApi): the per-call bounds alone let registration's calls in a
// row — the subscription ensure, the worker read and write, then the ownership epoch read with the pass
// request alongside — add up to 11.6 s (2.9 s × 4), past the gateway's 10 s (GATEWAY_CONTROL_TIMEOUT_MS),
// which gave up and retried into the same.
// Each call is now cut to what is left of the request's budget (WORKER_REQUEST_BUDGET_MS, 8 s): the
// documented 503 unavailable + Retry-After by then. Fake timers (setTimeout and performance.now: the budget
// is on the monotonic clock); the Firestore is an in-memory stub whose every call answers after `delayMs`.
import { type DocumentData, type Firestore, Timestamp } from '@google-cloud/firestore';
import type { PubSub } from '@google-cloud/pubsub';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../../../shared/src/adapters/log/json-logger.js';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import type { Authenticator } from '../auth/authenticator.js';
import { loadWorkersApiConfig, WORKER_REQUEST_BUDGET_MS, WORKER_SUBSCRIPTION_DEADLINE_MS } from './config.js';
import { workerRoutes } from './routes.js';
import { buildWorkersApi, WORKER_STORE_CALL_DEADLINE_MS } from './wiring.js';

/** Just inside each call's own bound: no single call is ever given up on it. */
const SLOW_FIRESTORE_MS = WORKER_STORE_CALL_DEADLINE_MS - 100;
const SLOW_ADMIN_MS = WORKER_SUBSCRIPTION_DEADLINE_MS - 100;
const SLOW_PUBLISH_MS = 1_900; // WORKER_PUBLISH_DEADLINE_MS is 2 s

const after = <T>(ms: number, value: () => T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value()), ms));

/** Documents by path; every read and write (and batch commit) answers after `slow.delayMs`. */
function slowFirestore() {
  const docs = new Map<string, { data: DocumentData; updateTime: Timestamp }>();
  const slow = { delayMs: 0, calls: 0 };
  let tick = 0;
  const write = (path: string, data: DocumentData) => {
    docs.set(path, { data, updateTime: Timestamp.fromMillis(++tick) });
  };
  const merge = (path: string, data: DocumentData) => write(path, { ...docs.get(path)?.data, ...data });
  const answer = <T>(value: () => T) => {
    slow.calls++;
    return after(slow.delayMs, value);
  };
  const doc = (path: string) => ({
    path,
    id: path.split('/').pop(),
    get: () =>
      answer(() => {
        const d = docs.get(path);
        return { exists: d !== undefined, data: () => d?.data, updateTime: d?.updateTime };
      }),
    create: (data: DocumentData) => answer(() => write(path, data)),
    update: (data: DocumentData) => answer(() => merge(path, data)),
  });
  const batch = () => {
    const ops: (() => void)[] = [];
    const b = {
      create(ref: { path: string }, data: DocumentData) {
        ops.push(() => write(ref.path, data));
        return b;
      },
      update(ref: { path: string }, data: DocumentData) {
        ops.push(() => merge(ref.path, data));
        return b;
      },
      commit: () =>
        answer(() => {
          for (const op of ops) op();
        }),
    };
    return b;
  };
  const firestore = {
    collection: (name: string) => ({ doc: (id: string) => doc(`${name}/${id}`) }),
    batch,
  } as unknown as Firestore;
  return { firestore, slow, docs };
}

/** Pub/Sub whose admin calls answer after `slow.adminMs`, and publishes are confirmed after `slow.publishMs`. */
function slowPubSub() {
  const slow = { adminMs: 0, publishMs: 0 };
  const pubsub = {
    topic: () => ({
      publishMessage: () => after(slow.publishMs, () => 'message-id'),
      createSubscription: () => after(slow.adminMs, () => [{}]),
    }),
  } as unknown as PubSub;
  return { pubsub, slow };
}

function api() {
  const fs = slowFirestore();
  const ps = slowPubSub();
  const deps = buildWorkersApi({
    firestore: fs.firestore,
    pubsub: ps.pubsub,
    projectId: 'p',
    config: loadWorkersApiConfig({ PROXYPLANE_LOCAL: '1' }),
    adminAuth: {} as Authenticator,
    clock: new ManualClock(new Date('2026-01-01T00:00:00Z')),
    log: memoryLogger(),
  });
  const app = workerRoutes(deps);
  /** POSTs, advancing the fake timers until it is answered; `ms`: the fake time it took. */
  const post = async (path: string, body: unknown) => {
    const t0 = performance.now();
    let done = false;
    const answer = Promise.resolve(
      app.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    ).finally(() => {
      done = true;
    });
    for (let waited = 0; !done && waited < 20_000; waited += 50) await vi.advanceTimersByTimeAsync(50);
    const res = await answer;
    return { res, ms: performance.now() - t0 };
  };
  const everythingSlow = () => {
    fs.slow.delayMs = SLOW_FIRESTORE_MS;
    ps.slow.adminMs = SLOW_ADMIN_MS;
    ps.slow.publishMs = SLOW_PUBLISH_MS;
  };
  return { post, everythingSlow, fs, ps };
}

// Every call of every test on fake time: the slowed adapters' waits and the budget's clock.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const registration = { workerId: 'gw-1', instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 };

describe('a worker call whose every Firestore and Pub/Sub call answers just inside its own bound', () => {
  it('registration: 503 unavailable with Retry-After within the request budget, not 200 at 11.6 s', async () => {
    const { post, everythingSlow } = api();
    everythingSlow();
    const { res, ms } = await post('/register', registration);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
    // The ensure (2.9 s) and the worker read (2.9 s) answered; the create was cut to the 2.2 s left.
    expect(ms).toBeGreaterThanOrEqual(WORKER_REQUEST_BUDGET_MS - 50);
    expect(ms).toBeLessThanOrEqual(WORKER_REQUEST_BUDGET_MS + 100);
  });

  it('outcomes (the worker read, its header, the batch): 503 unavailable within the budget', async () => {
    const { post, everythingSlow, fs } = api();
    const registered = await post('/register', registration);
    expect(registered.res.status).toBe(200);
    const { sessionId } = (await registered.res.json()) as { sessionId: string };
    everythingSlow();
    const calls = fs.slow.calls;
    const { res, ms } = await post('/gw-1/outcomes', { sessionId, sequence: 1, outcomes: [] });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
    expect(ms).toBeLessThanOrEqual(WORKER_REQUEST_BUDGET_MS + 100);
    expect(fs.slow.calls - calls).toBe(3);
  });

  it('a fast Firestore is not held to the budget: registration answers 200 at once', async () => {
    const { post } = api();
    const { res, ms } = await post('/register', registration);
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(500);
  });
});

describe('registration with the optional pass request slow as well as the required calls', () => {
  it('a retry answers 200: the pass request (best effort) does not eat the time the ownership epoch read needs', async () => {
    const { post, fs, ps } = api();
    // Firestore 1.9 s a call, the subscription ensure 2.9 s, the pass request's publish 1.9 s.
    fs.slow.delayMs = 1_900;
    ps.slow.adminMs = SLOW_ADMIN_MS;
    ps.slow.publishMs = SLOW_PUBLISH_MS;
    // The first: the ensure, the worker read and its write take 6.7 s; the epoch read gets the 1.3 s left
    // and is cut (the write landed: a retry resumes the session).
    const first = await post('/register', registration);
    expect(first.res.status).toBe(503);
    // Each retry: the ensure and the worker read (4.8 s), no write; the epoch read (1.9 s) fits in the
    // budget, and only the pass request, best effort, may be cut.
    for (const _ of [1, 2]) {
      const { res, ms } = await post('/register', registration);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ resumed: true });
      expect(ms).toBeLessThanOrEqual(WORKER_REQUEST_BUDGET_MS + 100);
    }
  });
});
