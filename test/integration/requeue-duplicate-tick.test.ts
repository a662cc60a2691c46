// A requeue tick Pub/Sub delivers twice at once (at least once: two instances may each take a copy) is
// swept once: both copies of the push, handled by the function's event handler (event.ts) as the deployed
// function handles them, claim jobRuns/requeue-sweep in a Firestore transaction, and the one that comes
// second finds the first's claim of the same tick (the message's publish time, which every copy carries).
// Claimed with no gap, or by anything a copy does not share (the time it arrived), both swept, and every
// proxy due in the tick's minute was published twice.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { onRequeueEvent, type RequeueEventDeps } from '../../functions/requeue/src/event.js';
import { FirestoreJobRunStore } from '../../shared/src/adapters/firestore/job-run-store.js';
import { FirestoreProxyStore } from '../../shared/src/adapters/firestore/proxy-store.js';
import { memoryLogger } from '../../shared/src/adapters/log/json-logger.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { aProxy } from '../../shared/src/testing/proxy-fixtures.js';
import { RecordingReconcilePublisher } from '../../shared/src/testing/recording-publisher.js';
import { releaseProject, testProjectId } from '../support/emulators.js';

const projectId = testProjectId();
// One client per function instance that takes a copy of the tick.
const instances = [new Firestore({ projectId }), new Firestore({ projectId })];
afterAll(async () => {
  await Promise.all(instances.map((db) => db.terminate()));
  await releaseProject(projectId);
});

// The two claims take seconds on a loaded machine (3–8 s seen): the window outlasts them, and the steady
// fleet's listing (not what this test is about) gets a minute, so the sweep neither starts past its
// window nor skips its drift slots (a run recorded failed lets the second copy sweep again).
const PERIOD_MS = 10_000;

describe('a requeue tick delivered twice at once', () => {
  it('is swept by one delivery: each due proxy is published once', async () => {
    await new FirestoreProxyStore(instances[0]!).create(
      aProxy({
        name: 'due',
        status: { phase: 'Provisioning', nextReconcileAt: new Date(systemClock.now().getTime() - 1_000) },
      }),
    );
    // The push Pub/Sub delivers (the CloudEvent the functions framework builds of it), both copies alike.
    const publishTime = systemClock.now().toISOString();
    const messageId = '8317350155447791';
    const push = {
      specversion: '1.0',
      id: messageId,
      type: 'google.cloud.pubsub.topic.v1.messagePublished',
      source: `//pubsub.googleapis.com/projects/${projectId}/topics/ticks-requeue`,
      data: {
        subscription: `projects/${projectId}/subscriptions/ticks-requeue-push`,
        message: {
          data: Buffer.from(JSON.stringify({ job: 'requeue-sweep' })).toString('base64'),
          messageId,
          publishTime,
        },
      },
    };
    const publisher = new RecordingReconcilePublisher();
    const log = memoryLogger();
    const deliver = (db: Firestore) => {
      const deps: RequeueEventDeps = {
        runs: new FirestoreJobRunStore(db),
        store: new FirestoreProxyStore(db),
        publisher,
        clock: systemClock,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        log,
        tickPeriodMs: PERIOD_MS,
        marginMs: 100,
        pollMs: 100,
        driftPollMs: 60_000,
        batch: 100,
        maxBatch: 1_000,
        listingTimeoutMs: 60_000,
      };
      return onRequeueEvent(deps, structuredClone(push));
    };
    await Promise.all(instances.map(deliver));
    expect(publisher.published.map((r) => r.proxy)).toEqual(['due']);
    const skipped = log.lines.filter((l) => String(l.message).startsWith('requeue tick skipped'));
    expect(skipped).toEqual([expect.objectContaining({ tick: publishTime })]);
    expect(log.lines.filter((l) => l.severity === 'ERROR')).toEqual([]);
    const run = await new FirestoreJobRunStore(instances[0]!).get('requeue-sweep');
    expect(run).toMatchObject({ ok: true, counts: { due: 1 }, tick: publishTime });
  });
});
