// A gateway's registration against a Firestore slow on every call (the emulator, each document read and
// write held up just inside the stores' per-call bound): the per-call bounds alone let the calls made in a
// row — the worker read and write, the ownership epoch — add up past the gateway's own timeout
// (GATEWAY_CONTROL_TIMEOUT_MS), which gave up and retried into the same. The worker call's budget
// (WORKER_REQUEST_BUDGET_MS; smaller here, as the call bound is) cuts each call to what is left of it: the
// documented 503 unavailable + Retry-After by the budget's end. A fast Firestore then registers the worker.

import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ApiServer } from '../../functions/api/src/server.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import {
  GATEWAY_SNAPSHOTS_TOPIC,
  SNAPSHOT_REQUESTS_TOPIC,
} from '../../shared/src/messages/worker-snapshot-request.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { type Slow, slowCallsSettled, slowedFirestore } from '../support/slowed-firestore.js';
import { timedCall } from '../support/timed-call.js';
import { workerToken } from '../support/worker-client.js';
import { startWorkersApi } from '../support/workers-api.js';

const projectId = testProjectId('demo-wrb');
const db = new Firestore({ projectId });
const pubsub = new PubSub({ projectId });

/** The bounds the test injects (the API's own: 3 s a call, 8 s a request). */
const CALL_MS = 2_000;
const BUDGET_MS = 3_000;
/** Every Firestore call answers inside CALL_MS (with the emulator's own time): three in a row are past BUDGET_MS. */
const SLOW_MS = 1_200;

const slow: Slow = { ms: SLOW_MS, calls: 0 };
let api: ApiServer;
const log = memoryLogger();

beforeAll(async () => {
  // The client's connection made first: the first call's setup would count against its bound.
  await db.collection('warm-up').doc('x').get();
  for (const topic of [GATEWAY_SNAPSHOTS_TOPIC, SNAPSHOT_REQUESTS_TOPIC]) await pubsub.createTopic(topic);
  api = await startWorkersApi(slowedFirestore(db, slow), {
    pubsub,
    projectId,
    storeDeadlines: { callDeadlineMs: CALL_MS },
    requestBudgetMs: BUDGET_MS,
    log,
  });
});

afterAll(async () => {
  await api?.close();
  // The call the first registration's budget cut is still sent once its wait is over: not to a terminated client.
  await slowCallsSettled(slow);
  await releaseProject(projectId);
  await Promise.all([db.terminate(), pubsub.close()]);
});

const register = () =>
  timedCall(`${api.url}/v1/workers/register`, 'POST', {
    token: workerToken('gw-1'),
    body: { workerId: 'gw-1', instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 },
    timeoutMs: 10_000,
  });

it('registration on a Firestore slow on every call: 503 unavailable with Retry-After at the budget', async () => {
  const res = await register();
  expect(res).toMatchObject({ status: 503, retryAfter: '1', body: { error: 'unavailable' } });
  // Given up on the budget, not on a call's own bound.
  expect(JSON.stringify(log.lines)).toMatch(/the request's (time )?budget/);
  expect(res.ms).toBeGreaterThanOrEqual(BUDGET_MS - 50);
  // Without the budget, three calls at SLOW_MS each and a 200; a loaded machine's event loop may answer late.
  expect(res.ms).toBeLessThan(BUDGET_MS + 1_000);
  // The worker read answered in time; the write or the epoch after it was cut to what was left.
  expect(slow.calls).toBeGreaterThanOrEqual(2);

  // Firestore fast again: the retry registers (resumes the session the given-up call wrote, or opens one).
  // Retried on a 503 after its Retry-After, as the gateway does: the emulator on a loaded machine can itself
  // take past the budget once.
  slow.ms = 0;
  let again = await register();
  for (let attempt = 1; attempt < 3 && again.status === 503; attempt++) {
    await sleep(Number(again.retryAfter ?? '1') * 1_000);
    again = await register();
  }
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({ sessionId: expect.any(String) });
});
