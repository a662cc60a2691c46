// Each Cloud Scheduler call has a deadline of its own (CloudSchedulerJobs callTimeoutMs): the client
// library's default for these methods is 600 s, so a call the API never answered held the operator's
// request until Cloud Run's timeout. The real client (REST transport, as under `npm start`) against a
// loopback server that takes the connection and never answers.
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCloudSchedulerClient } from './client.js';
import { CloudSchedulerJobs } from './cloud-scheduler-jobs.js';

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
});
