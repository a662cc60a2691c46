// The gateway workers' endpoints against a Firestore that takes a call and never answers it (the emulator,
// some calls held up in the client): a gateway's ACK and snapshot fetch, and the admin listing the CLI
// reads, answer the documented `503 unavailable` with Retry-After at the stores' call deadline — instead of
// holding the handler (and its Firestore call) for the client's 300 s while the gateway gives up at 10 s
// and retries, each retry holding another, into Cloud Run's plain-text 504.

import { randomUUID } from 'node:crypto';
import { type CollectionReference, Firestore, type Query } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../functions/api/src/server.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { heldUpFirestore } from '../support/held-up-firestore.js';
import { timedCall } from '../support/timed-call.js';
import { ADMIN_TOKEN, workerToken } from '../support/worker-client.js';
import { startWorkersApi } from '../support/workers-api.js';

const projectId = testProjectId('demo-ws');
const db = new Firestore({ projectId });
const pubsub = new PubSub({ projectId });

/** The deadline the tests inject (the API's own is WORKER_STORE_CALL_DEADLINE_MS, wiring.ts). */
const DEADLINE_MS = 1_000;
/** How long a request may take: the deadline and slack — far under the client's 300 s. */
const ANSWER_WITHIN_MS = 3 * DEADLINE_MS;

const never = new Promise<void>(() => {});

/** `target` with every query on the collections in `held` (where, orderBy, … then get) waiting on `gate`. */
function heldQueries(target: Firestore, held: string[], gate: Promise<void>): Firestore {
  const query = <Q extends Query>(q: Q): Q =>
    new Proxy(q, {
      get(o, prop) {
        const v = Reflect.get(o, prop, o);
        if (prop === 'get')
          return async () => {
            await gate;
            return o.get();
          };
        if (typeof v !== 'function') return v;
        if (['where', 'orderBy', 'limit', 'startAfter', 'select'].includes(String(prop)))
          return (...args: unknown[]) => query((v as (...a: unknown[]) => Query).apply(o, args));
        return v.bind(o);
      },
    });
  return new Proxy(target, {
    get(o, prop) {
      if (prop === 'collection')
        return (path: string) => {
          const c = o.collection(path);
          return held.includes(path) ? query<CollectionReference>(c) : c;
        };
      const v = Reflect.get(o, prop, o);
      return typeof v === 'function' ? v.bind(o) : v;
    },
  });
}

const servers: ApiServer[] = [];
async function startApi(firestore: Firestore): Promise<ApiServer> {
  const api = await startWorkersApi(firestore, {
    pubsub,
    projectId,
    storeDeadlines: { callDeadlineMs: DEADLINE_MS },
  });
  servers.push(api);
  return api;
}

// Without a deadline the request waits out the client's 300 s: the timeout says so, as a failure.
const call = (api: ApiServer, token: string, method: string, path: string, body?: unknown) =>
  timedCall(`${api.url}${path}`, method, { token, body, timeoutMs: ANSWER_WITHIN_MS + 2_000 });

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await releaseProject(projectId);
  await Promise.all([db.terminate(), pubsub.close()]);
});

describe('reads of workers/gw-1 that Firestore never answers', () => {
  const sessionId = randomUUID();
  it.each([
    [
      'POST',
      '/v1/workers/gw-1/ack',
      { sessionId, version: 1, epoch: 0, checksum: 'a'.repeat(64) } as unknown,
    ],
    ['GET', `/v1/workers/gw-1/snapshot?sessionId=${sessionId}`, undefined],
  ])('%s %s: 503 unavailable with Retry-After at the deadline', async (method, path, body) => {
    const api = await startApi(heldUpFirestore(db, { reads: ['workers/gw-1'] }, never));
    const res = await call(api, workerToken('gw-1'), method, path, body);
    expect(res).toMatchObject({ status: 503, retryAfter: '1', body: { error: 'unavailable' } });
    expect(res.ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(res.ms).toBeLessThan(ANSWER_WITHIN_MS);
  });
});

it('GET /v1/gateway/workers whose listing Firestore never answers: 503 unavailable with Retry-After', async () => {
  const api = await startApi(heldQueries(db, ['workers'], never));
  const res = await call(api, ADMIN_TOKEN, 'GET', '/v1/gateway/workers');
  expect(res).toMatchObject({ status: 503, retryAfter: '1', body: { error: 'unavailable' } });
  expect(res.ms).toBeLessThan(ANSWER_WITHIN_MS);
});
