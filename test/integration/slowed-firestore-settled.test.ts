// test/support/slowed-firestore.ts's slowCallsSettled: a call given up on by its caller (the API's bound or
// budget) is still sent once its wait is over. Sent to a terminated client, a read rejects in a promise
// @google-cloud/firestore discards — an unhandled rejection vitest reports against whichever file the worker
// runs next (it failed a CI run that way, from worker-request-budget.test.ts). Awaiting the settled calls
// before terminate sends each to a live client.
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import { afterEach, expect, it } from 'vitest';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { type Slow, slowCallsSettled, slowedFirestore } from '../support/slowed-firestore.js';
import { recordUnhandledRejections } from '../support/unhandled-rejections.js';

const projectId = testProjectId('demo-slowset');
afterEach(() => releaseProject(projectId));

it('waits for calls their callers gave up on, so none reaches a terminated client', async () => {
  const rejections = recordUnhandledRejections();
  const db = new Firestore({ projectId });
  const slow: Slow = { ms: 300, calls: 0 };
  const slowed = slowedFirestore(db, slow);
  const outcomes: string[] = [];
  let terminated = false;
  try {
    // Given up on at once, as a budget cuts a call: nobody awaits them.
    for (const id of ['a', 'b']) {
      void slowed
        .collection('things')
        .doc(id)
        .get()
        .then((s) => outcomes.push(`${id}:${s.exists}`));
    }
    void slowed
      .collection('things')
      .doc('c')
      .set({ n: 1 })
      .then(() => outcomes.push('c:set'));
    await slowCallsSettled(slow);
    expect(outcomes.sort()).toEqual(['a:false', 'b:false', 'c:set']);
    expect(slow.calls).toBe(3);
    terminated = true;
    await db.terminate();
    // Past every wait: a call still pending would have been sent to the terminated client by now.
    await sleep(slow.ms + 200);
    expect(rejections.reasons).toEqual([]);
  } finally {
    rejections.stop();
    // Failed part-way: the calls sent to a live client, not into the next file.
    if (!terminated) {
      await sleep(slow.ms + 200);
      await db.terminate();
    }
  }
});

it('settles at once with no call made', async () => {
  const slow: Slow = { ms: 10_000, calls: 0 };
  const db = new Firestore({ projectId });
  slowedFirestore(db, slow);
  const started = performance.now();
  await slowCallsSettled(slow);
  expect(performance.now() - started).toBeLessThan(1_000);
  await db.terminate();
});
