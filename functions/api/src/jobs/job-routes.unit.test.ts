import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../../shared/src/ports/clock.js';
import { JobSchedulerError } from '../../../../shared/src/ports/job-scheduler.js';
import { harness } from '../testing/harness.js';
import { JOB_RUNS_READ_DEADLINE_MS } from './job-controls.js';
import { InMemoryJobRuns, InMemoryJobScheduler } from './testing/in-memory-jobs.js';

const IDS = ['requeue-sweep', 'probe-tick', 'gc-sweep'];

function setup(scheduler: 'present' | 'absent' = 'present') {
  const runs = new InMemoryJobRuns();
  const clock = new ManualClock(new Date('2026-02-01T12:00:00Z'));
  const sched = new InMemoryJobScheduler(IDS, () => clock.now());
  const h = harness({ clock, jobs: { scheduler: scheduler === 'present' ? sched : null, runs } });
  return { ...h, sched, runs };
}

describe('/v1/jobs', () => {
  it('lists every job with Cloud Scheduler fields and the last recorded run', async () => {
    const h = setup();
    h.runs.runs.set('gc-sweep', {
      job: 'gc-sweep',
      startedAt: new Date('2026-02-01T11:50:00Z'),
      finishedAt: new Date('2026-02-01T11:50:02Z'),
      ok: true,
      counts: { instancesDeleted: 2, instancesKept: 5 },
      error: null,
    });
    const res = await h.call('GET', '/v1/jobs');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { jobs: Array<Record<string, unknown>>; count: number };
    expect(body.count).toBe(3);
    expect(body.jobs.map((j) => j.name)).toEqual(IDS);
    expect(body.jobs[2]).toEqual({
      name: 'gc-sweep',
      resource: 'projects/p/locations/l/jobs/gc-sweep',
      description: 'the gc-sweep job',
      schedule: '* * * * *',
      timeZone: 'Etc/UTC',
      state: 'ENABLED',
      lastAttemptTime: null,
      lastStatus: null,
      nextRunTime: '2026-02-01T12:01:00.000Z',
      lastRun: {
        startedAt: '2026-02-01T11:50:00.000Z',
        finishedAt: '2026-02-01T11:50:02.000Z',
        ok: true,
        counts: { instancesDeleted: 2, instancesKept: 5 },
        error: null,
      },
    });
    expect(body.jobs[0]?.lastRun).toBeNull();
    expect(body).toMatchObject({ missing: [] });
  });

  it('names the table jobs Cloud Scheduler lacks, and warns', async () => {
    const h = setup();
    h.sched.jobs.delete('probe-tick');
    const res = await h.call('GET', '/v1/jobs');
    expect(await res.json()).toMatchObject({ count: 2, missing: ['probe-tick'] });
    expect(h.log.lines.some((l) => l.severity === 'WARNING' && l.missing !== undefined)).toBe(true);
  });

  it('runs, pauses and resumes, answering the job', async () => {
    const h = setup();
    const run = await h.call('POST', '/v1/jobs/gc-sweep:run');
    expect(run.status).toBe(200);
    expect(await run.json()).toMatchObject({
      name: 'gc-sweep',
      lastAttemptTime: '2026-02-01T12:00:00.000Z',
      lastStatus: { code: 'OK', message: '' },
    });
    expect(h.sched.runs).toEqual(['gc-sweep']);
    const paused = await h.call('POST', '/v1/jobs/probe-tick:pause');
    expect(await paused.json()).toMatchObject({ state: 'PAUSED', nextRunTime: null });
    const got = await h.call('GET', '/v1/jobs/probe-tick');
    expect(await got.json()).toMatchObject({ name: 'probe-tick', state: 'PAUSED' });
    const resumed = await h.call('POST', '/v1/jobs/probe-tick:resume');
    expect(await resumed.json()).toMatchObject({ state: 'ENABLED' });
  });

  it.each([
    ['POST', '/v1/jobs/gc-sweep:run?dryRun=true'],
    ['POST', '/v1/jobs/probe-tick:pause?until=tomorrow'],
    ['GET', '/v1/jobs?state=PAUSED'],
    ['GET', '/v1/jobs/gc-sweep?view=full'],
  ])('%s %s: an unknown query parameter is 400 invalid_request, and nothing runs', async (method, path) => {
    const h = setup();
    const res = await h.call(method, path);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: 'invalid_request',
      issues: [expect.objectContaining({ message: expect.stringMatching(/unknown query parameter/) })],
    });
    expect(h.sched.runs).toEqual([]);
    expect(h.sched.jobs.get('probe-tick')?.state).toBe('ENABLED');
  });

  it('refuses to run a paused job: 409 job_paused', async () => {
    const h = setup();
    await h.call('POST', '/v1/jobs/probe-tick:pause');
    const res = await h.call('POST', '/v1/jobs/probe-tick:run');
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: 'job_paused' });
    expect(h.sched.runs).toEqual([]);
  });

  it('refuses to run a DISABLED job: 409 conflict naming the state, not job_paused', async () => {
    const h = setup();
    h.sched.jobs.get('gc-sweep')!.state = 'DISABLED';
    const res = await h.call('POST', '/v1/jobs/gc-sweep:run');
    expect(res.status).toBe(409);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('conflict');
    expect(body.message).toContain('DISABLED');
    expect(h.sched.runs).toEqual([]);
  });

  it.each([
    ['GET', '/v1/jobs/nope'],
    ['POST', '/v1/jobs/nope:run'],
    ['POST', '/v1/jobs/nope:pause'],
    ['POST', '/v1/jobs/nope:resume'],
    ['POST', '/v1/jobs/GC-SWEEP:run'],
    ['POST', '/v1/jobs/a:b:run'],
  ])('%s %s → 404 unknown_job', async (method, path) => {
    const res = await setup().call(method, path);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: 'unknown_job' });
  });

  it.each([
    ['GET', `/v1/jobs/${'x'.repeat(8000)}`],
    ['POST', `/v1/jobs/${'x'.repeat(8000)}:run`],
  ])('%s of an 8,000-character name: 404 unknown_job, the name not echoed whole', async (method, path) => {
    const res = await setup().call(method, path);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('unknown_job');
    expect(body.message.length).toBeLessThan(200);
  });

  it.each([['/v1/jobs/gc-sweep:delete'], ['/v1/jobs/gc-sweep'], ['/v1/jobs/:run']])(
    'POST %s → 404 not_found (no such action)',
    async (path) => {
      const h = setup();
      const res = await h.call('POST', path);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'not_found' });
      expect(h.sched.runs).toEqual([]);
    },
  );

  // The action is read first: with a body (or a query) the same 404, not the no-body check's 400.
  it.each([['/v1/jobs/gc-sweep'], ['/v1/jobs/gc-sweep:delete?x=1']])(
    'POST %s with a body → 404 not_found, as without one',
    async (path) => {
      const h = setup();
      const res = await h.call('POST', path, { force: true });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'not_found' });
      expect(h.sched.runs).toEqual([]);
    },
  );

  it.each([
    [new JobSchedulerError('refused', 'DISABLED'), 409, 'conflict', null],
    [new JobSchedulerError('denied', 'PERMISSION_DENIED'), 503, 'unavailable', '5'],
    [new JobSchedulerError('unavailable', 'UNAVAILABLE'), 503, 'unavailable', '5'],
  ])('a scheduler refusal %o → %i %s', async (err, status, code, retryAfter) => {
    const h = setup();
    h.sched.failNext = err;
    const res = await h.call('POST', '/v1/jobs/gc-sweep:pause');
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject({ error: code });
    expect(res.headers.get('retry-after')).toBe(retryAfter);
  });

  // A run whose tick may have been dispatched: no Retry-After, or the CLI's retry would dispatch another.
  it('a run whose outcome Cloud Scheduler did not tell → 503 outcome_unknown without Retry-After', async () => {
    const h = setup();
    h.sched.failNext = new JobSchedulerError('outcome_unknown', 'DEADLINE_EXCEEDED');
    const res = await h.call('POST', '/v1/jobs/gc-sweep:run');
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('outcome_unknown');
    expect(body.message).toMatch(/may have been dispatched.*GET \/v1\/jobs\/gc-sweep/);
    expect(res.headers.get('retry-after')).toBeNull();
  });

  it('logs a refused service account as an error (a deployment problem)', async () => {
    const h = setup();
    h.sched.failNext = new JobSchedulerError('denied', 'PERMISSION_DENIED');
    await h.call('GET', '/v1/jobs');
    expect(
      h.log.lines.some((l) => l.severity === 'ERROR' && /refused the API service/.test(String(l.message))),
    ).toBe(true);
  });

  it('GET answers 503 when the job runs cannot be read', async () => {
    const h = setup();
    h.runs.failWith = new Error('firestore down');
    for (const [method, path] of [
      ['GET', '/v1/jobs'],
      ['GET', '/v1/jobs/gc-sweep'],
    ] as const) {
      const res = await h.call(method, path);
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ error: 'unavailable' });
    }
  });

  // The action is done once Cloud Scheduler answered: a 503 would be retried (the CLI retries a 503 with
  // Retry-After ≤ 5 once) and publish a second tick, and tell the caller it failed when it did not.
  it.each([
    ['run', 'gc-sweep', { lastAttemptTime: '2026-02-01T12:00:00.000Z' }],
    ['pause', 'probe-tick', { state: 'PAUSED' }],
    ['resume', 'probe-tick', { state: 'ENABLED' }],
  ])(
    'POST :%s when the job runs cannot be read → 200 with lastRun null, and a warning',
    async (action, id, fields) => {
      const h = setup();
      h.runs.failWith = new Error('firestore down');
      const res = await h.call('POST', `/v1/jobs/${id}:${action}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ name: id, ...fields, lastRun: null });
      expect(h.sched.runs).toEqual(action === 'run' ? [id] : []);
      expect(h.log.lines.some((l) => l.severity === 'WARNING' && l.job === id)).toBe(true);
    },
  );

  // A Firestore that takes the read and never answers: the answer comes at the bound, well inside the
  // CLI's 30 s — a POST …:run held past it read as "cannot reach", and the operator's second try
  // dispatched a second tick (docs/operations-jobs.md § Run now).
  describe('job runs that never answer', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    const stalled = () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const h = setup();
      const never = () => new Promise<never>(() => {});
      h.runs.get = never;
      h.runs.list = never;
      return h;
    };
    /** The answer, once `ms` of fake time have passed (undefined if there is none by then). */
    const within = async (answer: Response | Promise<Response>, ms: number) => {
      let res: Response | undefined;
      void Promise.resolve(answer).then((r) => {
        res = r;
      });
      await vi.advanceTimersByTimeAsync(ms);
      return res;
    };

    it('POST :run → 200 with lastRun null at the bound, the tick dispatched once', async () => {
      expect(JOB_RUNS_READ_DEADLINE_MS).toBeLessThanOrEqual(5_000);
      const h = stalled();
      const res = await within(h.call('POST', '/v1/jobs/gc-sweep:run'), JOB_RUNS_READ_DEADLINE_MS + 100);
      expect(res?.status).toBe(200);
      expect(await res!.json()).toMatchObject({ name: 'gc-sweep', lastRun: null });
      expect(h.sched.runs).toEqual(['gc-sweep']);
    });

    it.each([
      ['GET', '/v1/jobs'],
      ['GET', '/v1/jobs/gc-sweep'],
    ] as const)('%s %s → 503 unavailable with Retry-After at the bound', async (method, path) => {
      const h = stalled();
      const res = await within(h.call(method, path), JOB_RUNS_READ_DEADLINE_MS + 100);
      expect(res?.status).toBe(503);
      expect(res!.headers.get('retry-after')).toBe('5');
      expect(await res!.json()).toMatchObject({ error: 'unavailable' });
    });
  });

  it('answers 503 unavailable when no scheduler is configured', async () => {
    const res = await setup('absent').call('GET', '/v1/jobs');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: 'unavailable' });
  });

  it.each([
    ['GET', '/v1/jobs'],
    ['POST', '/v1/jobs/gc-sweep:run'],
    ['POST', '/v1/jobs/probe-tick:pause'],
  ])('%s %s needs an admin credential', async (method, path) => {
    const h = setup();
    const res = await h.call(method, path, undefined, { authorization: '' });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'unauthenticated' });
    expect(h.sched.jobs.get('probe-tick')?.state).toBe('ENABLED');
    expect(h.sched.runs).toEqual([]);
  });

  it('refuses a body on an action: 400 invalid_request', async () => {
    const h = setup();
    const res = await h.call('POST', '/v1/jobs/gc-sweep:run', { force: true });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    expect(h.sched.runs).toEqual([]);
  });

  it('documents the routes in /openapi.json', async () => {
    const res = await setup().call('GET', '/openapi.json');
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/jobs',
        '/v1/jobs/{name}',
        '/v1/jobs/{name}:run',
        '/v1/jobs/{name}:pause',
        '/v1/jobs/{name}:resume',
      ]),
    );
    expect(doc.paths['/v1/jobs/{name}:run']?.post).toMatchObject({ responses: { 409: {} } });
  });
});
