// A requeue tick Pub/Sub delivers twice at once (at least once: two instances may each take a copy) is
// swept once: both copies claim jobRuns/requeue-sweep in a Firestore transaction, and the one that comes
// second finds the first's claim of the same tick (its publish time). Claimed with no gap, both swept, and
// every proxy due in the tick's minute was published twice.
import { Firestore } from '@google-cloud/firestore';
import { afterAll, describe, expect, it } from 'vitest';
import { recordedSweep } from '../../functions/requeue/src/job-run.js';
import { runSweep, type SweepDeps, sweepWindow } from '../../functions/requeue/src/sweep.js';
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

const PERIOD_MS = 3_000;

describe('a requeue tick delivered twice at once', () => {
  it('is swept by one delivery: each due proxy is published once', async () => {
    await new FirestoreProxyStore(instances[0]!).create(
      aProxy({
        name: 'due',
        status: { phase: 'Provisioning', nextReconcileAt: new Date(systemClock.now().getTime() - 1_000) },
      }),
    );
    const tickAt = systemClock.now();
    const publisher = new RecordingReconcilePublisher();
    const log = memoryLogger();
    const deliver = (db: Firestore) => {
      const deps: SweepDeps = {
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
      };
      const deadline = new Date(sweepWindow(deps, tickAt, systemClock.now()).end);
      return recordedSweep(
        { runs: new FirestoreJobRunStore(db), clock: systemClock, log },
        { tick: tickAt.toISOString(), deadline },
        (resumeAt) => runSweep(deps, tickAt, resumeAt),
      );
    };
    const reports = await Promise.all(instances.map(deliver));
    expect(reports.filter((r) => r === null)).toHaveLength(1);
    expect(publisher.published.map((r) => r.proxy)).toEqual(['due']);
    const run = await new FirestoreJobRunStore(instances[0]!).get('requeue-sweep');
    expect(run).toMatchObject({ ok: true, counts: { due: 1 } });
  });
});
