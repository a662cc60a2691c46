// The API server's close() and shutdown() against a handler whose client went away: the response closes,
// the handler does not — its store calls go on. Both returned as soon as the connections were gone, and the
// caller's next step, terminating the Firestore client (every test's teardown; main.ts's clients close),
// left the handler's next read refused in a promise the library drops: an unhandled rejection, reported
// against whichever file the vitest worker ran next. Each now waits for the handlers, bounded.
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../functions/api/src/server.js';
import {
  GATEWAY_SNAPSHOTS_TOPIC,
  SNAPSHOT_REQUESTS_TOPIC,
} from '../../shared/src/messages/worker-snapshot-request.js';
import { clearProject, releaseProject, testProjectId } from '../support/emulators.js';
import { pollUntil } from '../support/poll.js';
import { type Slow, slowCallsSettled, slowedFirestore } from '../support/slowed-firestore.js';
import { recordUnhandledRejections } from '../support/unhandled-rejections.js';
import { workerToken } from '../support/worker-client.js';
import { startWorkersApi } from '../support/workers-api.js';

const projectId = testProjectId('demo-closewait');
const pubsub = new PubSub({ projectId });
/** Each of registration's Firestore calls (a worker read, its write, the epoch read) waits this long first. */
const SLOW_MS = 500;

// A first registration each time (no worker to resume): three calls.
beforeEach(async () => {
  await clearProject(projectId);
  for (const topic of [GATEWAY_SNAPSHOTS_TOPIC, SNAPSHOT_REQUESTS_TOPIC]) await pubsub.createTopic(topic);
});

afterAll(async () => {
  await releaseProject(projectId);
  await pubsub.close();
});

/** A registration its client gives up on once the handler is in its first (slowed) read. */
async function abandonedRegistration(api: ApiServer, slow: Slow): Promise<void> {
  const abort = new AbortController();
  const given = fetch(`${api.url}/v1/workers/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${workerToken('gw-1')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ workerId: 'gw-1', instanceId: 'i-1', zone: 'z-a', supportedProtocolVersion: 1 }),
    signal: abort.signal,
  });
  given.catch(() => {});
  await pollUntil(
    () => slow.calls,
    (n) => n >= 1,
    10_000,
    'the handler in its first call',
  );
  abort.abort();
  await expect(given).rejects.toThrow();
}

describe.each([
  ['close()', (api: ApiServer) => api.close()],
  ['shutdown(5 s)', (api: ApiServer) => api.shutdown(5_000)],
])('%s with a handler whose client went away', (_name, stop) => {
  it('returns once the handler has, so that no call reaches a terminated client', async () => {
    const rejections = recordUnhandledRejections();
    const db = new Firestore({ projectId });
    const slow: Slow = { ms: SLOW_MS, calls: 0 };
    let api: ApiServer | undefined;
    let terminated = false;
    try {
      await db.collection('warm-up').doc('x').get();
      api = await startWorkersApi(slowedFirestore(db, slow), {
        pubsub,
        projectId,
        storeDeadlines: { callDeadlineMs: 3_000 },
      });
      await abandonedRegistration(api, slow);
      await stop(api);
      // The handler's calls all made (none cut: each well inside its deadline) and answered.
      expect(slow.calls).toBeGreaterThanOrEqual(3);
      let pending = true;
      void slowCallsSettled(slow).then(() => {
        pending = false;
      });
      await sleep(0);
      expect(pending).toBe(false);
      terminated = true;
      await db.terminate();
      // Past any wait still running: a call sent after the terminate would have been refused by now.
      await sleep(SLOW_MS * 2);
      expect(rejections.reasons).toEqual([]);
    } finally {
      rejections.stop();
      // Failed part-way: nothing of this test's left running into the next file.
      if (!terminated) {
        await api?.close();
        await slowCallsSettled(slow);
        await db.terminate();
      }
    }
  });
});
