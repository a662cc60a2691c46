import { describe, expect, it } from 'vitest';
import { runCli } from '../run.js';
import { cliDeps, recordingIo } from '../testing.js';

const job = {
  name: 'gc-sweep',
  schedule: '*/10 * * * *',
  state: 'ENABLED',
  lastAttemptTime: null,
  lastStatus: null,
  nextRunTime: null,
  lastRun: null,
};

/** runCli of `jobs …` against a fetch that records the URLs and answers `answer`. */
async function jobs(args: string[], answer: object = job) {
  const io = recordingIo();
  const sent: string[] = [];
  const fetch = (async (url: string) => {
    sent.push(url);
    return Response.json(answer);
  }) as unknown as typeof globalThis.fetch;
  const exit = await runCli(['jobs', ...args, '--api', 'http://127.0.0.1:9'], cliDeps(io, fetch));
  return { exit, out: io.outLines, err: io.errLines, sent };
}

// `missing` should always be empty (docs/operations-jobs.md): a job not deployed, or the API's REGION not
// Terraform's. It was dropped: `{jobs: [], missing: ['gc-sweep']}` printed "No jobs." and nothing else.
describe('jobs list: the jobs Cloud Scheduler lacks', () => {
  it('are named on stderr, the table on stdout as it is, exit 0 (as proxies list says what it skipped)', async () => {
    const r = await jobs(['list'], { jobs: [], count: 0, missing: ['gc-sweep', 'probe-tick'] });
    expect(r.exit).toBe(0);
    expect(r.out).toEqual(['No jobs.']);
    expect(r.err).toEqual([
      "2 job(s) of the schedule table are not in Cloud Scheduler and are not listed: gc-sweep, probe-tick (not deployed, or the API runs with another REGION than Terraform's)",
    ]);
  });

  it('say nothing when there are none, or the API is older than `missing`', async () => {
    expect((await jobs(['list'], { jobs: [job], count: 1, missing: [] })).err).toEqual([]);
    expect((await jobs(['list'], { jobs: [job], count: 1 })).err).toEqual([]);
  });
});

// An empty NAME went out as POST /v1/jobs/:run, answered as a route the API lacks, whose hint said the
// API was older than the CLI; a `:` or `/` in it made another path of it.
describe('jobs run|pause|resume NAME', () => {
  it.each([
    ['run', ''],
    ['pause', 'gc-sweep:run'],
    ['resume', 'a/b'],
    ['run', '..'],
    ['run', 'gc sweep'],
    ['run', 'x'.repeat(501)],
  ])('jobs %s %j is bad input: exit 2, nothing sent', async (verb, name) => {
    const r = await jobs([verb, name]);
    expect({ exit: r.exit, sent: r.sent }).toEqual({ exit: 2, sent: [] });
    expect(r.err[0]).toMatch(/^error: invalid_input — not a job name: /);
  });

  it.each([
    ['run', 'gc-sweep', 'http://127.0.0.1:9/v1/jobs/gc-sweep:run'],
    ['pause', 'probe_tick2', 'http://127.0.0.1:9/v1/jobs/probe_tick2:pause'],
  ])('jobs %s %s is sent', async (verb, name, url) => {
    const r = await jobs([verb, name]);
    expect({ exit: r.exit, sent: r.sent }).toEqual({ exit: 0, sent: [url] });
  });
});

// Cloud Scheduler answers RunJob with the job as it stood: its last tick and status are the previous
// attempt's. `jobs run` printed them in the job's table under "run requested", which read as this run's
// outcome — OK for a run whose publish then failed.
describe('jobs run: what it says of the run', () => {
  const before = { ...job, lastAttemptTime: '2026-01-01T00:00:00Z', lastStatus: { code: 'OK', message: '' } };

  it('says the run was dispatched, its outcome not known yet, the row the job before it', async () => {
    const r = await jobs(['run', 'gc-sweep'], before);
    expect(r.exit).toBe(0);
    expect(r.out).toHaveLength(1);
    const lines = r.out[0]!.split('\n');
    expect(lines[0]).toBe('job gc-sweep run requested');
    expect(lines[1]).toBe(
      'Cloud Scheduler accepted the run; its outcome is not known yet. The job as it stood before the run:',
    );
    expect(lines[2]).toMatch(/^NAME\s+STATE/);
    expect(lines[3]).toMatch(/^gc-sweep\s+ENABLED\s.*\sOK\s/);
    expect(lines[4]).toMatch(
      /^Watch `proxyplane jobs list`: LAST TICK moves to now with this run's TICK STATUS/,
    );
  });

  it('still answers the job as the API gave it with -o json', async () => {
    const r = await jobs(['run', 'gc-sweep', '-o', 'json'], before);
    expect(JSON.parse(r.out[0]!)).toEqual(before);
  });
});
