// The Cloud Scheduler REST subset, driven by the real @google-cloud/scheduler client (REST transport,
// local endpoint options), so operators' list/get/run/pause/resume commands work locally as on GCP.
import type { Message, Subscription } from '@google-cloud/pubsub';
import { CloudSchedulerClient } from '@google-cloud/scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { type SchedulerServer, startSchedulerServer } from '../../emulators/scheduler/server.js';
import { localClientOptions } from '../../shared/src/adapters/local-endpoints.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { clearProject, testProjectId } from '../support/emulators.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';

type SchedulerOptions = ConstructorParameters<typeof CloudSchedulerClient>[0];
const table = loadScheduleTable();

// gax 5's REST transport surfaces an HTTP error as a GaxiosError whose `code` is the HTTP status and whose
// message is Google's JSON error body (recipes §3): read the canonical status from there.
async function googleFailure(call: Promise<unknown>): Promise<{ http: unknown; status: unknown }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e as { code?: unknown; message?: string },
  );
  if (!err) throw new Error('the call succeeded');
  const body = JSON.parse(err.message ?? '{}') as { error?: { status?: string } };
  return { http: err.code, status: body.error?.status };
}
const location = 'us-central1';

describe('Cloud Scheduler REST subset', () => {
  const projectId = testProjectId();
  const parent = `projects/${projectId}/locations/${location}`;
  let plane: TestPlane;
  let server: SchedulerServer;
  let client: CloudSchedulerClient;
  let observe: Subscription;
  const seen: Message[] = [];

  beforeAll(async () => {
    plane = await startTestPlane({ projectId, scheduler: true });
    const port = await freePort();
    server = await startSchedulerServer(plane.scheduler!, { host: '127.0.0.1', port, projectId, location });
    // Cast: google-gax nests its own google-auth-library (10.5 vs the top-level 10.9), so the types of
    // PassThroughClient differ though the object works (reported to the lead; local-endpoints.ts is shared).
    client = new CloudSchedulerClient(localClientOptions(`127.0.0.1:${port}`) as SchedulerOptions);
    [observe] = await plane.pubsub.topic('ticks-gc').createSubscription('observe-gc');
    observe.on('message', (m: Message) => {
      m.ack();
      seen.push(m);
    });
  });
  afterAll(async () => {
    await observe?.close();
    await client?.close();
    await server?.stop();
    await plane?.stop();
    await clearProject(projectId);
  });

  it('lists every job of the table with its Pub/Sub target', async () => {
    const [jobs] = await client.listJobs({ parent });
    expect(jobs.map((j) => j.name).sort()).toEqual(
      Object.keys(table.jobs)
        .map((id) => `${parent}/jobs/${id}`)
        .sort(),
    );
    const gc = jobs.find((j) => j.name === `${parent}/jobs/gc-sweep`)!;
    expect(gc.schedule).toBe(table.jobs['gc-sweep']!.schedule);
    expect(gc.timeZone).toBe(table.timeZone);
    expect(gc.state).toBe('ENABLED');
    expect(gc.pubsubTarget?.topicName).toBe(`projects/${projectId}/topics/ticks-gc`);
    expect(JSON.parse(Buffer.from(gc.pubsubTarget!.data as Uint8Array).toString())).toEqual(
      table.jobs['gc-sweep']!.data,
    );
  });

  it('answers NOT_FOUND for an unknown job and for another project', async () => {
    const notFound = { http: 404, status: 'NOT_FOUND' };
    expect(await googleFailure(client.getJob({ name: `${parent}/jobs/nope` }))).toEqual(notFound);
    expect(
      await googleFailure(client.getJob({ name: `projects/other/locations/${location}/jobs/gc-sweep` })),
    ).toEqual(notFound);
    expect(await googleFailure(client.runJob({ name: `${parent}/jobs/nope` }))).toEqual(notFound);
    expect(await googleFailure(client.pauseJob({ name: `${parent}/jobs/nope` }))).toEqual(notFound);
  });

  it('runs a job now: it publishes and reports the attempt', async () => {
    const name = `${parent}/jobs/gc-sweep`;
    const [job] = await client.runJob({ name });
    // RunJob answers with the job as it stood (never attempted); the run's outcome shows in it later.
    expect(job.lastAttemptTime ?? null).toBeNull();
    expect(job.status ?? null).toBeNull();
    let [got] = await client.getJob({ name });
    for (const until = Date.now() + 10_000; !got.lastAttemptTime && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 50));
      [got] = await client.getJob({ name });
    }
    expect(got.lastAttemptTime?.seconds).toBeDefined();
    expect(got.status?.code ?? 0).toBe(0);
    const deadline = Date.now() + 10_000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(seen.map((m) => JSON.parse(m.data.toString()))).toEqual([{ job: 'gc-sweep' }]);
  });

  it('pauses a job, refuses to run it (FAILED_PRECONDITION), and resumes it', async () => {
    const name = `${parent}/jobs/gc-sweep`;
    const [paused] = await client.pauseJob({ name });
    expect(paused.state).toBe('PAUSED');
    expect((await client.getJob({ name }))[0].state).toBe('PAUSED');
    expect(await googleFailure(client.runJob({ name }))).toEqual({
      http: 400,
      status: 'FAILED_PRECONDITION',
    });
    expect(plane.scheduler!.get('gc-sweep').state).toBe('PAUSED');
    // "A job must be in Job.State.ENABLED to be paused" (and PAUSED to be resumed).
    expect(await googleFailure(client.pauseJob({ name }))).toEqual({
      http: 400,
      status: 'FAILED_PRECONDITION',
    });
    const [resumed] = await client.resumeJob({ name });
    expect(resumed.state).toBe('ENABLED');
    expect(await googleFailure(client.resumeJob({ name }))).toEqual({
      http: 400,
      status: 'FAILED_PRECONDITION',
    });
  });

  it('refuses job creation: the table owns the jobs', async () => {
    expect(
      await googleFailure(
        client.createJob({ parent, job: { name: `${parent}/jobs/x`, schedule: '* * * * *' } }),
      ),
    ).toEqual({ http: 501, status: 'UNIMPLEMENTED' });
  });
});
