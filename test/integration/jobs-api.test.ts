// Issue 11 on the local plane: the periodic functions as `npm start` hosts them (probe, gc, requeue,
// snapshot), the local scheduler firing on its own with its Cloud Scheduler REST front end, and the API
// as its own process talking to that front end through @google-cloud/scheduler (SCHEDULER_EMULATOR_HOST).
// An operator pauses probing and nothing probes — no health write, no probe log line — until they resume;
// runs a GC sweep now and sees its counts in the job list; names a job that does not exist and gets 404
// unknown_job.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { freePort } from '../../emulators/launcher/free-port.js';
import { type RunningService, startApi } from '../../emulators/local-plane/services.js';
import { type SchedulerServer, startSchedulerServer } from '../../emulators/scheduler/server.js';
import { Collections } from '../../shared/src/adapters/firestore/collections.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import { loadScheduleTable } from '../../shared/src/config/topology.js';
import { instanceNameFromUid } from '../../shared/src/domain/instance-name.js';
import { cliInProcess } from '../support/cli-process.js';
import { releaseProject, testProjectId } from '../support/emulators.js';
import { instanceRequest } from '../support/instance-request.js';
import { startTestPlane, type TestPlane } from '../support/local-plane.js';
import { untilStable } from '../support/poll.js';
import { type ProbeFleet, startProbeFleet } from '../support/probe-fleet.js';
import { eventually, functionLog, jsonLines } from './gc-support.js';

const SPEED = 2; // probe-tick and requeue-sweep every second, gc-sweep every 15 s
const PERIOD_MS = (loadScheduleTable().jobs['probe-tick']!.localEverySeconds * 1000) / SPEED;
const GC_GAP_MS = 2000;
const TOKEN = 'jobs-api-test-admin-token-0123456789';
const LOCATION = 'us-central1';
const ZONE = 'us-central1-a';

interface Job {
  name: string;
  resource: string;
  state: string;
  lastAttemptTime: string | null;
  lastStatus: { code: string; message: string } | null;
  nextRunTime: string | null;
  lastRun: {
    startedAt: string;
    finishedAt: string | null;
    ok: boolean | null;
    counts: Record<string, number>;
  } | null;
}

describe('operator controls over the periodic jobs (local plane)', () => {
  const projectId = testProjectId();
  let fleet: ProbeFleet;
  let plane: TestPlane;
  let scheduler: SchedulerServer;
  let api: RunningService;
  let p1: Awaited<ReturnType<ProbeFleet['add']>>;

  const call = async (method: string, path: string, token: string | null = TOKEN) => {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const job = async (name: string) => (await call('GET', `/v1/jobs/${name}`)).body as unknown as Job;
  const probeLines = () =>
    jsonLines(functionLog(plane.logDir, 'probe')).filter((l) => l.message === 'probe' && l.proxy === 'p1');
  const healthDoc = () => fleet.db.collection(Collections.health).doc('p1').get();

  beforeAll(async () => {
    fleet = await startProbeFleet(projectId);
    p1 = await fleet.add('p1', {
      // Not 3128: other suites' Compute emulators on this machine hand out the same loopback addresses.
      port: await freePort(),
      healthCheck: { url: fleet.target.url, intervalSeconds: 1, successThreshold: 1, failureThreshold: 3 },
    });
    plane = await startTestPlane({
      projectId,
      functions: ['probe', 'gc', 'requeue', 'snapshot'],
      scheduler: { start: true, speed: SPEED },
      env: {
        COMPUTE_EMULATOR_HOST: fleet.compute.endpoint,
        // Both tiers, as npm start runs them: a proxy has a verdict only once BASIC and EGRESS have one.
        PROBE_ECHO_URL: fleet.echoUrl,
        PROBE_CALLER_IPS: '127.0.0.1',
        PROBE_TICK_PERIOD_SECONDS: String(PERIOD_MS / 1000),
        REQUEUE_TICK_PERIOD_SECONDS: String(PERIOD_MS / 1000),
        // Short, not 0: a tick delivered twice (Pub/Sub is at least once) is one sweep, as deployed.
        GC_MIN_RUN_GAP_SECONDS: String(GC_GAP_MS / 1000),
      },
    });
    const port = await freePort();
    scheduler = await startSchedulerServer(plane.scheduler!, {
      host: '127.0.0.1',
      port,
      projectId,
      location: LOCATION,
    });
    api = await startApi({
      host: '127.0.0.1',
      port: await freePort(),
      env: {
        ...plane.env,
        PATH: process.env.PATH ?? '',
        SCHEDULER_EMULATOR_HOST: `127.0.0.1:${port}`,
        REGION: LOCATION,
        ADMIN_TOKENS: `ops:${TOKEN}`,
      },
      logDir: plane.logDir,
    });
  });
  afterAll(async () => {
    await api?.stop();
    await scheduler?.stop();
    await plane?.stop();
    await fleet?.stop();
    await releaseProject(projectId);
  });

  it('lists every job of the table behind admin auth, with what each function recorded', async () => {
    expect((await call('GET', '/v1/jobs', null)).status).toBe(401);
    expect((await call('GET', '/v1/jobs', 'not-the-token-0123456789abcdef')).status).toBe(401);
    const { status, body } = await call('GET', '/v1/jobs');
    expect(status).toBe(200);
    const jobs = body.jobs as Job[];
    expect(body.missing).toEqual([]);
    expect(jobs.map((j) => j.name)).toEqual(Object.keys(loadScheduleTable().jobs));
    for (const j of jobs) {
      expect(j.resource).toBe(`projects/${projectId}/locations/${LOCATION}/jobs/${j.name}`);
      expect(j.state).toBe('ENABLED');
    }
    // The scheduler fires on its own: the probe and requeue functions record their runs.
    const probe = await eventually('a recorded probe run', async () => {
      const j = await job('probe-tick');
      return j.lastRun?.finishedAt && j.lastRun.counts.probed! > 0 ? j : undefined;
    });
    expect(probe.lastRun).toMatchObject({ ok: true, counts: { proxies: 1 } });
    expect(probe.lastStatus).toEqual({ code: 'OK', message: '' });
    const requeue = await eventually('a recorded requeue sweep', async () => {
      const j = await job('requeue-sweep');
      return j.lastRun?.finishedAt ? j : undefined;
    });
    expect(requeue.lastRun).toMatchObject({ ok: true });
    expect(Object.keys(requeue.lastRun!.counts).sort()).toEqual(
      ['drift', 'due', 'polls', 'proxiesRequeued', 'publishFailures'].sort(),
    );
    const snapshot = await eventually('a recorded snapshot tick', async () => {
      const j = await job('snapshot-tick');
      return j.lastRun?.finishedAt ? j : undefined;
    });
    // No gateway pool and no worker: a pass with nothing to do.
    expect(snapshot.lastRun).toMatchObject({ ok: true, counts: { passes: 0, published: 0, failures: 0 } });
  });

  it.each([
    ['GET', '/v1/jobs/no-such-job'],
    ['POST', '/v1/jobs/no-such-job:run'],
    ['POST', '/v1/jobs/no-such-job:pause'],
    ['POST', '/v1/jobs/no-such-job:resume'],
  ])('%s %s → 404 unknown_job', async (method, path) => {
    const { status, body } = await call(method, path);
    expect(status).toBe(404);
    expect(body.error).toBe('unknown_job');
  });

  it('pausing probe-tick stops probing (no health write, no probe log line) until it is resumed', async () => {
    await eventually('p1 probed healthy', async () => {
      const state = await fleet.health.get('p1');
      return state?.verdict === 'AVAILABLE' && probeLines().some((l) => l.ok === true);
    });

    const paused = await call('POST', '/v1/jobs/probe-tick:pause');
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ name: 'probe-tick', state: 'PAUSED', nextRunTime: null });
    // A tick published just before the pause may still be delivered: let it run out — the probe job's
    // record, its log lines and the health doc unchanged for two periods, the last run finished.
    const observed = async () => {
      const j = await job('probe-tick');
      return {
        lines: probeLines().length,
        health: (await healthDoc()).updateTime?.toMillis() ?? null,
        attempt: j.lastAttemptTime,
        startedAt: j.lastRun?.startedAt ?? null,
        finishedAt: j.lastRun?.finishedAt ?? null,
      };
    };
    const quiet = await untilStable(observed, {
      quietMs: 2 * PERIOD_MS,
      timeoutMs: 30_000,
      what: 'probing to stop after the pause',
      everyMs: 200,
    });
    expect(quiet.finishedAt).not.toBeNull();
    const before = {
      lines: probeLines().length,
      health: (await healthDoc()).updateTime,
      job: await job('probe-tick'),
    };
    expect(before.lines).toBe(quiet.lines);
    const pausedSince = new Date().toISOString();

    // Were anything probing now, the dead proxy would be a health write and a failed probe line.
    await fleet.compute.admin.killProxy(projectId, p1.zone, p1.instance);
    const refused = await call('POST', '/v1/jobs/probe-tick:run');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('job_paused');
    // Evidence that time for several probe ticks went by with the scheduler firing: requeue-sweep, on the
    // same period, recorded three more runs meanwhile.
    const sweeps = new Set<string>();
    await eventually(
      'three more requeue sweeps while probing is paused',
      async () => {
        const startedAt = (await job('requeue-sweep')).lastRun?.startedAt;
        if (startedAt && startedAt > pausedSince) sweeps.add(startedAt);
        return sweeps.size >= 3;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

    expect(probeLines()).toHaveLength(before.lines);
    const health = await healthDoc();
    expect(health.updateTime?.isEqual(before.health!)).toBe(true);
    expect(health.data()?.verdict).toBe('AVAILABLE');
    const during = await job('probe-tick');
    expect(during.state).toBe('PAUSED');
    expect(during.lastAttemptTime).toBe(before.job.lastAttemptTime);
    expect(during.lastRun?.startedAt).toBe(before.job.lastRun?.startedAt);

    const resumed = await call('POST', '/v1/jobs/probe-tick:resume');
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ state: 'ENABLED' });
    await eventually('probing to resume and see the dead proxy', async () => {
      const state = await fleet.health.get('p1');
      return state?.verdict !== 'AVAILABLE' && probeLines().some((l) => l.ok === false);
    });
    expect(probeLines().length).toBeGreaterThan(before.lines);
    expect((await job('probe-tick')).lastRun!.startedAt > before.job.lastRun!.startedAt).toBe(true);
    // Who paused and resumed it is in the API's request log.
    const audit = jsonLines(join(plane.logDir, 'api.log')).filter((l) =>
      /^POST \/v1\/jobs\/probe-tick:(pause|resume) 200$/.test(String(l.message)),
    );
    expect(audit.map((l) => [l.message, l.principal])).toEqual([
      ['POST /v1/jobs/probe-tick:pause 200', 'token:ops'],
      ['POST /v1/jobs/probe-tick:resume 200', 'token:ops'],
    ]);
  });

  it('running gc-sweep now sweeps at once, and its counts appear in the job list', async () => {
    // No scheduled sweep may find the orphan first (it runs every 15 s here): pause the job, and let the
    // sweep of the last tick published finish — a tick published just before the pause may still be on
    // its way — before the orphan exists (or seen skipped by the gap, as a tick within 2 s of a sweep
    // is); then wait out the run gap, so that the sweep asked for below is not refused as too soon after it.
    await call('POST', '/v1/jobs/gc-sweep:pause');
    const skippedSince = (at: Date) =>
      jsonLines(functionLog(plane.logDir, 'gc')).some(
        (l) => String(l.message).startsWith('gc tick skipped') && new Date(String(l.time)) >= at,
      );
    const settled = await eventually('the last published gc tick swept', async () => {
      const { lastRun, lastAttemptTime } = await job('gc-sweep');
      if (!lastAttemptTime) return { lastRun: null };
      const attempt = new Date(lastAttemptTime);
      if (!lastRun?.finishedAt) return undefined;
      return new Date(lastRun.startedAt) >= attempt || skippedSince(attempt) ? { lastRun } : undefined;
    });
    if (settled.lastRun) {
      await sleep(Math.max(0, new Date(settled.lastRun.startedAt).getTime() + GC_GAP_MS + 200 - Date.now()));
    }
    const gce = makeGceProvider({ project: projectId, computeEndpoint: fleet.compute.endpoint });
    const orphanUid = randomUUID();
    try {
      await gce.provider.create(instanceRequest({ uid: orphanUid, proxyName: 'gone', zone: ZONE }));
    } finally {
      await gce.close();
    }
    fleet.compute.admin.backdate(projectId, ZONE, instanceNameFromUid(orphanUid), { ageMs: 3_600_000 });
    const exists = () =>
      fleet.compute.admin
        .instances({ project: projectId })
        .some((i) => i.name === instanceNameFromUid(orphanUid) && i.status !== 'STOPPING');
    expect(exists()).toBe(true);

    // Resuming restarts the job's timer, so that its next scheduled tick is a whole period (15 s) away.
    const { body: resumed } = await call('POST', '/v1/jobs/gc-sweep:resume');
    const nextScheduled = new Date((resumed as unknown as Job).nextRunTime!);
    const asked = new Date();
    const run = await call('POST', '/v1/jobs/gc-sweep:run');
    expect(run.status).toBe(200);
    // Cloud Scheduler answers with the job as it stood: its last attempt is an earlier one, not this run's.
    const answered = (run.body as unknown as Job).lastAttemptTime;
    expect(answered === null || new Date(answered) <= asked).toBe(true);

    const swept = await eventually('the gc run to show in the job list', async () => {
      const { body } = await call('GET', '/v1/jobs');
      const gc = (body.jobs as Job[]).find((j) => j.name === 'gc-sweep');
      const lastRun = gc?.lastRun;
      return lastRun?.finishedAt && new Date(lastRun.startedAt) >= asked ? gc : undefined;
    });
    expect(swept.lastRun).toMatchObject({
      ok: true,
      counts: { instancesDeleted: 1, instancesKept: 1, providersFailed: 0 },
    });
    expect(new Date(swept.lastRun!.finishedAt!) < nextScheduled).toBe(true);
    await eventually('the orphan to be deleted', () => !exists());
  });

  it('the CLI drives the same controls: proxyplane jobs list|run|pause|resume NAME', async () => {
    // runCli in this worker with a user's environment (test/support/cli-process.ts): what is particular
    // to a real CLI process is cli.test.ts's; here it is the commands against the real jobs API.
    const dir = mkdtempSync(join(tmpdir(), 'jobs-api-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const run = cliInProcess({ dir, apiUrl: () => api.url, adminToken: TOKEN });
    const cli = (...args: string[]) => run(args);
    const listed = await cli('jobs', 'list', '--output', 'json');
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { jobs: Job[] }).jobs.map((j) => j.name)).toEqual(
      Object.keys(loadScheduleTable().jobs),
    );
    expect((await cli('jobs', 'pause', 'requeue-sweep')).code).toBe(0);
    expect((await job('requeue-sweep')).state).toBe('PAUSED');
    const refused = await cli('jobs', 'run', 'requeue-sweep');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('job_paused');
    expect((await cli('jobs', 'resume', 'requeue-sweep')).code).toBe(0);
    expect((await job('requeue-sweep')).state).toBe('ENABLED');
    const unknown = await cli('jobs', 'run', 'no-such-job');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown_job');
  });
});
