// `proxyplane jobs run` against the API itself (app.request as the CLI's fetch) over the real Cloud
// Scheduler adapter, whose client dispatches the tick and then fails. A failure that may come after the
// dispatch (DEADLINE_EXCEEDED, UNAVAILABLE on gRPC) was answered 503 unavailable with Retry-After: 5, the
// CLI retried it once: two ticks, "run requested", exit 0. Such a failure is now 503 outcome_unknown with
// no Retry-After: one dispatch, exit 1, and a hint to look before running it again. A failure before
// anything could be dispatched is still retried.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InMemoryJobRuns } from '../../functions/api/src/jobs/testing/in-memory-jobs.js';
import { ADMIN_TOKEN, harness } from '../../functions/api/src/testing/harness.js';
import {
  CloudSchedulerJobs,
  type SchedulerClient,
} from '../../shared/src/adapters/scheduler/cloud-scheduler-jobs.js';
import { runCli } from '../run.js';
import { recordingIo } from '../testing.js';

afterEach(() => {
  vi.useRealTimers();
});

const JOB = 'projects/p/locations/l/jobs/gc-sweep';
// What gax throws on gRPC (code: the canonical number), and a socket error on the REST fallback.
const grpc = (code: number) => Object.assign(new Error(`${code} X: m`), { code });
const errno = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

/** A Cloud Scheduler client whose `runJob` dispatches, then throws `afterDispatch` (once). */
function scheduler(fail: { afterDispatch?: Error; beforeDispatch?: Error; onGet?: Error }) {
  const dispatched: string[] = [];
  const job = { name: JOB, state: 'ENABLED', schedule: '* * * * *' };
  const client = {
    getJob: async () => {
      const err = fail.onGet;
      fail.onGet = undefined;
      if (err) throw err;
      return [job];
    },
    runJob: async ({ name }: { name: string }) => {
      const before = fail.beforeDispatch;
      fail.beforeDispatch = undefined;
      if (before) throw before;
      dispatched.push(name);
      const after = fail.afterDispatch;
      fail.afterDispatch = undefined;
      if (after) throw after;
      return [job];
    },
    close: async () => {},
  } as unknown as SchedulerClient;
  const jobs = new CloudSchedulerJobs({ projectId: 'p', location: 'l', jobIds: ['gc-sweep'], client });
  return { jobs, dispatched };
}

async function jobsRun(fail: Parameters<typeof scheduler>[0]) {
  vi.useFakeTimers();
  const { jobs, dispatched } = scheduler(fail);
  const h = harness({ jobs: { scheduler: jobs, runs: new InMemoryJobRuns() } });
  const answers: Array<[number, string | null]> = [];
  const fetch = (async (url: string, init: RequestInit) => {
    const res = await h.app.request(url, init);
    answers.push([res.status, res.headers.get('retry-after')]);
    return res;
  }) as unknown as typeof globalThis.fetch;
  const io = recordingIo();
  const tokens = {
    env: { PROXYPLANE_ADMIN_TOKEN: ADMIN_TOKEN },
    localState: () => null,
    gcloudToken: () => null,
  };
  const done = runCli(['jobs', 'run', 'gc-sweep', '--api', 'http://127.0.0.1:9'], {
    io,
    env: {},
    tokens,
    fetch,
  });
  await vi.advanceTimersByTimeAsync(5_000);
  return { exit: await done, out: io.outLines, err: io.errLines, dispatched, answers };
}

describe('jobs run when Cloud Scheduler fails after it may have dispatched the tick', () => {
  it.each([
    ['DEADLINE_EXCEEDED', grpc(4)],
    ['UNAVAILABLE', grpc(14)],
    ['a reset connection', errno('ECONNRESET')],
  ])('%s: one dispatch, 503 outcome_unknown without Retry-After, exit 1', async (_n, err) => {
    const r = await jobsRun({ afterDispatch: err });
    expect(r.dispatched).toEqual([JOB]);
    expect(r.answers).toEqual([[503, null]]);
    expect(r.exit).toBe(1);
    expect(r.out).toEqual([]);
    expect(r.err.join('\n')).toMatch(/outcome_unknown/);
    expect(r.err.join('\n')).toMatch(/may have .*dispatched.*proxyplane jobs list/);
  });
});

describe('jobs run when nothing could have been dispatched', () => {
  it.each([
    ['the read before the run is UNAVAILABLE', { onGet: grpc(14) }],
    ['the run call is refused a connection', { beforeDispatch: errno('ECONNREFUSED') }],
    ['the run call is over quota', { beforeDispatch: grpc(8) }],
  ])('%s: 503 with Retry-After, retried once by the CLI: one dispatch, exit 0', async (_n, fail) => {
    const r = await jobsRun(fail);
    expect(r.answers).toEqual([
      [503, '5'],
      [200, null],
    ]);
    expect(r.dispatched).toEqual([JOB]);
    expect(r.exit).toBe(0);
    expect(r.out[0]).toMatch(/^job gc-sweep run requested\n/);
  });
});
