// Each Cloud Scheduler call has a deadline of its own (CloudSchedulerJobs callTimeoutMs): the client
// library's default for these methods is 600 s, so a call the API never answered held the operator's
// request until Cloud Run's timeout. The real client (REST transport, as under `npm start`) against a
// loopback server that takes the connection and never answers.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_REQUEST_TIMEOUT_MS } from '../../../../cli/http.js';
import { createCloudSchedulerClient } from './client.js';
import { CloudSchedulerJobs, SCHEDULER_CALL_TIMEOUT_MS } from './cloud-scheduler-jobs.js';

let server: net.Server;
const held = new Set<net.Socket>();
let host: string;

beforeAll(async () => {
  server = net.createServer((s) => {
    held.add(s);
    s.on('error', () => {});
    s.on('close', () => held.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((r) => server.close(r));
});

describe('CloudSchedulerJobs against a Cloud Scheduler that never answers', () => {
  const jobs = () =>
    new CloudSchedulerJobs({
      projectId: 'p',
      location: 'l',
      jobIds: ['a'],
      client: createCloudSchedulerClient(host),
      callTimeoutMs: 300,
    });

  it.each([
    ['list', (j: CloudSchedulerJobs) => j.list()],
    ['get', (j: CloudSchedulerJobs) => j.get('a')],
    ['pause', (j: CloudSchedulerJobs) => j.pause('a')],
  ])('%s fails unavailable at its deadline', async (_, call) => {
    const j = jobs();
    const started = performance.now();
    await expect(call(j)).rejects.toMatchObject({ kind: 'unavailable' });
    // Bounded by the deadline, not the library's 600 s (the test's own timeout is 5 s).
    expect(performance.now() - started).toBeLessThan(4_000);
    await j.close();
  });

  it('a run whose state is read but whose run call is never answered is outcome_unknown at its deadline', async () => {
    const client = createCloudSchedulerClient(host);
    // The state read answered (an ENABLED job), the run call sent to the silent server.
    const answering = Object.assign(Object.create(client) as typeof client, {
      getJob: async () => [{ name: 'projects/p/locations/l/jobs/a', state: 'ENABLED' }],
    });
    const j = new CloudSchedulerJobs({
      projectId: 'p',
      location: 'l',
      jobIds: ['a'],
      client: answering,
      callTimeoutMs: 300,
    });
    await expect(j.run('a')).rejects.toMatchObject({ kind: 'outcome_unknown' });
    await j.close();
  });
});

// A run's two calls end before the CLI stops waiting: otherwise the CLI reports the plane unreachable (as
// if nothing was sent) for a run whose tick may have gone out, and a re-run sends a second.
it("bounds a job run's calls within the CLI's request timeout", () => {
  expect(2 * SCHEDULER_CALL_TIMEOUT_MS).toBeLessThan(CLI_REQUEST_TIMEOUT_MS - 5_000);
});
