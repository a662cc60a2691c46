// The scheduler module (shared/src/adapters/scheduler) driving the real @google-cloud/scheduler client
// against the local scheduler's Cloud Scheduler REST subset: the calls the admin API makes, with the state
// and refusals operators get on GCP — a paused job publishes nothing and its run is refused, unknown jobs
// are unknown_job, an unreachable scheduler is unavailable.
import type { Message, Subscription } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { type SchedulerServer, startSchedulerServer } from '../../emulators/scheduler/server.js';
import { createCloudSchedulerClient } from '../../shared/src/adapters/scheduler/client.js';
import { CloudSchedulerJobs } from '../../shared/src/adapters/scheduler/cloud-scheduler-jobs.js';
import { controllableJobIds } from '../../shared/src/adapters/scheduler/job-names.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { pollUntil, untilStable } from '../support/poll.js';

const location = 'us-central1';
const table = loadScheduleTable();

describe('scheduler module against the local Cloud Scheduler REST subset', () => {
  const projectId = testProjectId();
  let plane: TestPlane;
  let server: SchedulerServer;
  let jobs: CloudSchedulerJobs;
  let observe: Subscription;
  const seen: unknown[] = [];
  /** When each tick in `seen` was published (the emulator's clock: this machine's). */
  const publishedAt: number[] = [];
  /** How many ticks had arrived before the paused job was run (and refused). */
  let beforePausedRun = 0;

  beforeAll(async () => {
    plane = await startTestPlane({ projectId, scheduler: true });
    const port = await freePort();
    server = await startSchedulerServer(plane.scheduler!, { host: '127.0.0.1', port, projectId, location });
    jobs = new CloudSchedulerJobs({
      projectId,
      location,
      jobIds: controllableJobIds(table),
      client: createCloudSchedulerClient(`127.0.0.1:${port}`),
    });
    [observe] = await plane.pubsub.topic('ticks-gc').createSubscription('observe-gc-module');
    observe.on('message', (m: Message) => {
      m.ack();
      seen.push(JSON.parse(m.data.toString()));
      publishedAt.push(m.publishTime.getTime());
    });
  });
  afterAll(async () => {
    await observe?.close();
    await jobs?.close();
    await server?.stop();
    await plane?.stop();
    await clearProject(projectId);
  });

  it('lists every job of the table, enabled, under its Cloud Scheduler name', async () => {
    const { jobs: found, missing } = await jobs.list();
    expect(missing).toEqual([]);
    expect(found.map((j) => j.id)).toEqual(Object.keys(table.jobs));
    for (const j of found) {
      expect(j).toMatchObject({
        resource: `projects/${projectId}/locations/${location}/jobs/${j.id}`,
        schedule: table.jobs[j.id]!.schedule,
        timeZone: table.timeZone,
        state: 'ENABLED',
        lastAttemptTime: null,
        lastStatus: null,
      });
    }
  });

  it('runs a job now: the tick is published and the attempt reported', async () => {
    const before = Date.now();
    const job = await jobs.run('gc-sweep');
    // RunJob answers with the job as it stood (never attempted); the run's outcome shows in it later.
    expect(job).toMatchObject({ lastAttemptTime: null, lastStatus: null });
    const attempted = await pollUntil(
      () => jobs.get('gc-sweep'),
      (j) => j.lastAttemptTime !== null,
      20_000,
      "the run's attempt in the job",
    );
    expect(attempted.lastAttemptTime!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(attempted.lastStatus).toEqual({ code: 'OK', message: '' });
    // Up to 20 s for the streaming pull to hand the tick over: 5 s was too short on a loaded runner.
    await pollUntil(
      () => seen.length,
      (n) => n > 0,
      20_000,
      'the published tick',
    );
    expect(seen).toEqual([{ job: 'gc-sweep' }]);
  });

  it('pauses: the state is PAUSED, run is refused and publishes nothing; pause again is fine', async () => {
    expect((await jobs.pause('gc-sweep')).state).toBe('PAUSED');
    expect((await jobs.pause('gc-sweep')).state).toBe('PAUSED');
    expect((await jobs.get('gc-sweep')).nextRunTime).toBeNull();
    beforePausedRun = seen.length;
    await expect(jobs.run('gc-sweep')).rejects.toMatchObject({ kind: 'paused' });
    expect(plane.scheduler!.get('gc-sweep').state).toBe('PAUSED');
    // That it published nothing is checked once the next tick has arrived (below): a wait here would
    // pass on a tick slower than it.
  });

  it('resumes (idempotently), and the job runs again; the refused run had published nothing', async () => {
    const resumedAt = Date.now();
    expect((await jobs.resume('gc-sweep')).state).toBe('ENABLED');
    expect((await jobs.resume('gc-sweep')).state).toBe('ENABLED');
    await jobs.run('gc-sweep');
    // Until the resumed run's tick is in, then until nothing more comes: a tick the refused run had
    // published went out before the resume, and arrives before (or just after) this one.
    await pollUntil(
      () => publishedAt.slice(beforePausedRun),
      (t) => t.some((at) => at >= resumedAt),
      20_000,
      "the resumed run's tick",
    );
    await untilStable(() => seen.length, {
      quietMs: 1_000,
      timeoutMs: 10_000,
      what: 'the ticks since the pause',
    });
    expect(seen.slice(beforePausedRun)).toEqual([{ job: 'gc-sweep' }]);
    expect(publishedAt[beforePausedRun]).toBeGreaterThanOrEqual(resumedAt);
  });

  it('an id outside the table is unknown_job; so is a table job the scheduler lacks', async () => {
    await expect(jobs.get('nope')).rejects.toMatchObject({ kind: 'unknown_job' });
    const wider = new CloudSchedulerJobs({
      projectId,
      location,
      jobIds: [...controllableJobIds(table), 'not-deployed'],
      client: createCloudSchedulerClient(server.url.replace('http://', '')),
    });
    try {
      await expect(wider.pause('not-deployed')).rejects.toMatchObject({ kind: 'unknown_job' });
      expect((await wider.list()).missing).toEqual(['not-deployed']);
    } finally {
      await wider.close();
    }
  });

  it('a scheduler that does not answer is unavailable', async () => {
    const port = await freePort();
    const dead = new CloudSchedulerJobs({
      projectId,
      location,
      jobIds: controllableJobIds(table),
      client: createCloudSchedulerClient(`127.0.0.1:${port}`),
    });
    try {
      await expect(dead.list()).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(dead.pause('probe-tick')).rejects.toMatchObject({ kind: 'unavailable' });
    } finally {
      await dead.close();
    }
  });
});
