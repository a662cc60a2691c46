import { describe, expect, it } from 'vitest';
import { CloudSchedulerJobs, type SchedulerClient } from './cloud-scheduler-jobs.js';

const parent = 'projects/p/locations/l';
const googleError = (http: number, status: string) =>
  Object.assign(new Error(JSON.stringify({ error: { code: http, message: status, status } })), {
    code: http,
  });

/** Cloud Scheduler as documented: pause needs ENABLED, resume needs PAUSED, run refuses PAUSED. */
class FakeScheduler {
  calls: string[] = [];
  states = new Map<string, string>([
    [`${parent}/jobs/a`, 'ENABLED'],
    [`${parent}/jobs/b`, 'PAUSED'],
    [`${parent}/jobs/not-in-table`, 'ENABLED'],
    ['projects/p/locations/elsewhere/jobs/a', 'ENABLED'],
  ]);
  failWith: Error | undefined;

  private job(name: string) {
    const state = this.states.get(name);
    if (!state) throw googleError(404, 'NOT_FOUND');
    return { name, state, schedule: '* * * * *' };
  }
  private op(verb: string, name: string, from: string | null, to: string | null) {
    this.calls.push(`${verb} ${name.split('/').pop()}`);
    if (this.failWith) throw this.failWith;
    const job = this.job(name);
    if (from && job.state !== from) throw googleError(400, 'FAILED_PRECONDITION');
    if (to) this.states.set(name, to);
    return [this.job(name)] as [ReturnType<FakeScheduler['job']>];
  }
  client(): SchedulerClient {
    const c = {
      listJobs: async (req: { parent: string }) => {
        this.calls.push('list');
        if (this.failWith) throw this.failWith;
        return [
          [...this.states.keys()].filter((n) => n.startsWith(`${req.parent}/`)).map((n) => this.job(n)),
        ];
      },
      getJob: async ({ name }: { name: string }) => this.op('get', name, null, null),
      runJob: async ({ name }: { name: string }) => this.op('run', name, 'ENABLED', null),
      pauseJob: async ({ name }: { name: string }) => this.op('pause', name, 'ENABLED', 'PAUSED'),
      resumeJob: async ({ name }: { name: string }) => this.op('resume', name, 'PAUSED', 'ENABLED'),
      close: async () => {},
    };
    return c as unknown as SchedulerClient;
  }
}

const setup = () => {
  const fake = new FakeScheduler();
  const jobs = new CloudSchedulerJobs({
    projectId: 'p',
    location: 'l',
    jobIds: ['a', 'b', 'c'],
    client: fake.client(),
  });
  return { fake, jobs };
};

describe('CloudSchedulerJobs', () => {
  it('lists the table jobs of this location in table order, reporting the undeployed ones', async () => {
    const { jobs } = setup();
    const { jobs: found, missing } = await jobs.list();
    expect(found.map((j) => [j.id, j.state, j.resource])).toEqual([
      ['a', 'ENABLED', `${parent}/jobs/a`],
      ['b', 'PAUSED', `${parent}/jobs/b`],
    ]);
    expect(missing).toEqual(['c']);
  });

  it.each(['get', 'run', 'pause', 'resume'] as const)(
    '%s of an id outside the table is unknown_job without a request',
    async (op) => {
      const { fake, jobs } = setup();
      await expect(jobs[op]('not-in-table')).rejects.toMatchObject({ kind: 'unknown_job' });
      expect(fake.calls).toEqual([]);
    },
  );

  it('a table job Cloud Scheduler lacks is unknown_job', async () => {
    const { jobs } = setup();
    await expect(jobs.get('c')).rejects.toMatchObject({ kind: 'unknown_job' });
    await expect(jobs.pause('c')).rejects.toMatchObject({ kind: 'unknown_job' });
  });

  it('runs an enabled job; refuses a paused one without asking Cloud Scheduler to run it', async () => {
    const { fake, jobs } = setup();
    await expect(jobs.run('a')).resolves.toMatchObject({ id: 'a', state: 'ENABLED' });
    await expect(jobs.run('b')).rejects.toMatchObject({ kind: 'paused' });
    expect(fake.calls).toEqual(['get a', 'run a', 'get b']);
  });

  it('maps a FAILED_PRECONDITION from run (paused in between) to paused', async () => {
    const { fake } = setup();
    const client = fake.client();
    const racing = new CloudSchedulerJobs({
      projectId: 'p',
      location: 'l',
      jobIds: ['a'],
      client: {
        ...client,
        getJob: async (req: { name: string }) => {
          const answer = await client.getJob(req);
          fake.states.set(req.name, 'PAUSED');
          return answer;
        },
      } as unknown as SchedulerClient,
    });
    await expect(racing.run('a')).rejects.toMatchObject({ kind: 'paused' });
    expect(fake.calls).toEqual(['get a', 'run a']);
  });

  it('pause and resume are idempotent', async () => {
    const { jobs } = setup();
    await expect(jobs.pause('a')).resolves.toMatchObject({ state: 'PAUSED' });
    await expect(jobs.pause('a')).resolves.toMatchObject({ state: 'PAUSED' });
    await expect(jobs.resume('a')).resolves.toMatchObject({ state: 'ENABLED' });
    await expect(jobs.resume('a')).resolves.toMatchObject({ state: 'ENABLED' });
  });

  it('a state Cloud Scheduler will not change from is refused', async () => {
    const { fake, jobs } = setup();
    fake.states.set(`${parent}/jobs/a`, 'DISABLED');
    await expect(jobs.pause('a')).rejects.toMatchObject({ kind: 'refused' });
    await expect(jobs.resume('a')).rejects.toMatchObject({ kind: 'refused' });
  });

  it.each(['DISABLED', 'UPDATE_FAILED'])(
    'run of a %s job is refused (conflict), not "paused: resume it first"',
    async (state) => {
      const { fake, jobs } = setup();
      fake.states.set(`${parent}/jobs/a`, state);
      const err = await jobs.run('a').catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: 'refused' });
      expect((err as Error).message).toContain(state);
      // Refused before asking Cloud Scheduler to dispatch a tick it would refuse (or run on a broken job).
      expect(fake.calls).toEqual(['get a']);
    },
  );

  it.each([
    [googleError(403, 'PERMISSION_DENIED'), 'denied'],
    [googleError(503, 'UNAVAILABLE'), 'unavailable'],
  ])('%s → %s on every operation', async (err, kind) => {
    const { fake, jobs } = setup();
    fake.failWith = err;
    for (const op of ['get', 'run', 'pause', 'resume'] as const) {
      await expect(jobs[op]('a')).rejects.toMatchObject({ kind });
    }
    await expect(jobs.list()).rejects.toMatchObject({ kind });
  });
});
