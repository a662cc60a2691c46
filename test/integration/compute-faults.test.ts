// Every fault the emulator can inject, reached through the admin HTTP endpoint and observed through
// the real @google-cloud/compute clients in GCE's own error shapes, or at the instance's proxy.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ComputeAdminClient } from '../../emulators/compute/admin-client.js';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import {
  computeClients,
  gceErrorOf,
  instanceBody,
  operationOf,
  waitForOperation,
} from '../../emulators/compute/testing.js';
import {
  connectViaProxy,
  type EchoTarget,
  requestViaProxy,
  startEchoTarget,
} from '../../emulators/forward-proxy/testing.js';
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';

const project = 'demo-compute-faults';
const zone = 'us-central1-a';
let emu: ComputeEmulator;
let admin: ComputeAdminClient;
let clients: ReturnType<typeof computeClients>;
let target: EchoTarget;

beforeAll(async () => {
  target = await startEchoTarget();
  emu = await startComputeEmulator({
    projectId: project,
    bootDelayMs: 100,
    deleteDelayMs: 100,
    // long enough that STOPPING is observable through the client on a loaded machine
    stopDelayMs: 1500,
    addressRange: { first: '127.2.0.2', last: '127.2.255.254' },
  });
  admin = new ComputeAdminClient(emu.url);
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await emu?.stop();
  await target?.close();
});

afterEach(async () => {
  await admin.reset();
});

async function running(name: string, z = zone) {
  const [op] = await clients.instances.insert({
    project,
    zone: z,
    instanceResource: instanceBody(name, { zone: z }),
  });
  await waitForOperation(clients.zoneOps, project, z, operationOf(op).name!);
  const [vm] = await clients.instances.get({ project, zone: z, instance: name });
  expect(vm.status).toBe('RUNNING');
  return { host: vm.networkInterfaces![0]!.accessConfigs![0]!.natIP!, port: 3128 };
}

const status = async (name: string) =>
  (await clients.instances.get({ project, zone, instance: name }))[0].status;

describe('quota', () => {
  it('sync: the insert itself fails with 403 quotaExceeded (usageLimits), the next one succeeds', async () => {
    await admin.injectQuota({ count: 1, mode: 'sync', metric: 'CPUS', limit: 8 });
    const err = await clients.instances
      .insert({ project, zone, instanceResource: instanceBody('q-sync', { zone }) })
      .catch((e: unknown) => e);
    expect(err?.constructor.name).toBe('GaxiosError');
    expect(gceErrorOf(err)).toEqual({
      httpStatus: 403,
      reason: 'quotaExceeded',
      domain: 'usageLimits',
      message: "Quota 'CPUS' exceeded.  Limit: 8.0 in region us-central1.",
    });
    expect(await admin.instances({ project })).toEqual([]);
    await running('q-sync');
  });

  it('async: the insert is accepted, the Operation ends with QUOTA_EXCEEDED / 403, no instance exists', async () => {
    await admin.injectQuota({ count: 1, mode: 'async' });
    const [lro] = await clients.instances.insert({
      project,
      zone,
      instanceResource: instanceBody('q-async', { zone }),
    });
    const done = await waitForOperation(clients.zoneOps, project, zone, operationOf(lro).name!);
    expect(done.error?.errors?.[0]?.code).toBe('QUOTA_EXCEEDED');
    expect(done.httpErrorStatusCode).toBe(403);
    const [again] = await clients.zoneOps.get({ project, zone, operation: operationOf(lro).name! });
    expect(again.error?.errors?.[0]?.code).toBe('QUOTA_EXCEEDED');
    const missing = await clients.instances
      .get({ project, zone, instance: 'q-async' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(missing).httpStatus).toBe(404);
  });
});

describe('5xx', () => {
  it('reaches the client as a GaxiosError with the HTTP status and reason backendError, not retried', async () => {
    await running('e-5xx');
    await admin.injectErrors({ count: 1, code: 503, operations: ['get'] });
    const before = (await admin.counters()).get;
    const err = await clients.instances.get({ project, zone, instance: 'e-5xx' }).catch((e: unknown) => e);
    expect(gceErrorOf(err)).toMatchObject({ httpStatus: 503, reason: 'backendError' });
    expect((await admin.counters()).get - before).toBe(1);
    expect(await status('e-5xx')).toBe('RUNNING');
  });

  it('a 403 is the API rate limit (rateLimitExceeded, usageLimits), which the gce provider retries and gets past', async () => {
    await running('e-403');
    await admin.injectErrors({ count: 1, code: 403, operations: ['get'] });
    const err = await clients.instances.get({ project, zone, instance: 'e-403' }).catch((e: unknown) => e);
    expect(gceErrorOf(err)).toMatchObject({ httpStatus: 403, reason: 'rateLimitExceeded' });

    await admin.injectErrors({ count: 1, code: 403, operations: ['get'] });
    const gce = makeGceProvider({
      project,
      computeEndpoint: emu.endpoint,
      retry: { attempts: 2, baseMs: 1, maxMs: 1 },
    });
    try {
      await expect(gce.provider.get(`zones/${zone}/instances/e-403`)).resolves.toMatchObject({
        state: 'Running',
      });
    } finally {
      await gce.close();
    }
  });

  it('fails a seeded share of requests when given a rate', async () => {
    await running('e-rate');
    await admin.injectErrors({ rate: 0.5, code: 500, operations: ['get'], seed: 7 });
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, () =>
        clients.instances.get({ project, zone, instance: 'e-rate' }).then(
          () => 'ok',
          (e: unknown) => gceErrorOf(e).httpStatus,
        ),
      ),
    );
    const failed = outcomes.filter((o) => o === 500).length;
    expect(failed).toBeGreaterThan(5);
    expect(failed).toBeLessThan(35);
    expect(outcomes.every((o) => o === 'ok' || o === 500)).toBe(true);
  });
});

describe('not found and conflicts', () => {
  it('404 notFound for an unknown instance, operation or project; 409 alreadyExists for a duplicate', async () => {
    const noVm = await clients.instances.get({ project, zone, instance: 'nope' }).catch((e: unknown) => e);
    expect(gceErrorOf(noVm)).toMatchObject({ httpStatus: 404, reason: 'notFound' });
    expect(gceErrorOf(noVm).message).toBe(
      `The resource 'projects/${project}/zones/${zone}/instances/nope' was not found`,
    );
    const noOp = await clients.zoneOps
      .get({ project, zone, operation: 'operation-1-x' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(noOp)).toMatchObject({ httpStatus: 404, reason: 'notFound' });
    const noProject = await clients.instances
      .get({ project: 'someone-else', zone, instance: 'x' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(noProject)).toMatchObject({ httpStatus: 404, reason: 'notFound' });
    const noDelete = await clients.instances
      .delete({ project, zone, instance: 'nope' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(noDelete).httpStatus).toBe(404);
    await running('c-dup');
    const dup = await clients.instances
      .insert({ project, zone, instanceResource: instanceBody('c-dup', { zone }) })
      .catch((e: unknown) => e);
    expect(gceErrorOf(dup)).toMatchObject({ httpStatus: 409, reason: 'alreadyExists' });
  });
});

describe('VM events', () => {
  it.each([
    ['stop', 'compute.instances.guestTerminate'],
    ['preempt', 'compute.instances.preempted'],
  ] as const)(
    '%s: STOPPING → TERMINATED, the proxy stops answering, and it stays TERMINATED',
    async (event, opType) => {
      const proxy = await running(`v-${event}`);
      const { operation } =
        event === 'stop'
          ? await admin.stopInstance(project, zone, `v-${event}`)
          : await admin.preemptInstance(project, zone, `v-${event}`);
      expect(await status(`v-${event}`)).toBe('STOPPING');
      const done = await waitForOperation(clients.zoneOps, project, zone, operation);
      expect(done.operationType).toBe(opType);
      const [vm] = await clients.instances.get({ project, zone, instance: `v-${event}` });
      expect(vm.status).toBe('TERMINATED');
      if (event === 'preempt') expect(vm.statusMessage).toBe('Instance was preempted.');
      await expect(requestViaProxy(proxy, `${target.url}/x`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await new Promise((r) => setTimeout(r, 300));
      expect(await status(`v-${event}`)).toBe('TERMINATED');
    },
  );

  it('kill: GCE still says RUNNING but connections are refused; revive brings the proxy back', async () => {
    const proxy = await running('p-kill');
    expect((await requestViaProxy(proxy, `${target.url}/before`)).status).toBe(200);
    const killed = await admin.killProxy(project, zone, 'p-kill');
    expect(killed.proxy).toMatchObject({ killed: true, url: null });
    await expect(requestViaProxy(proxy, `${target.url}/dead`)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    expect(await status('p-kill')).toBe('RUNNING');
    await admin.reviveProxy(project, zone, 'p-kill');
    expect((await requestViaProxy(proxy, `${target.url}/after`)).status).toBe(200);
  });

  it('hang: connections are accepted but never answered, so clients time out', async () => {
    const proxy = await running('p-hang');
    await admin.hangProxy(project, zone, 'p-hang', true);
    await expect(requestViaProxy(proxy, `${target.url}/hung`, { timeoutMs: 300 })).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    await expect(
      connectViaProxy(proxy, `${target.host}:${target.port}`, { timeoutMs: 300 }),
    ).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    expect(target.seen.some((s) => s.url === '/hung')).toBe(false);
    await admin.hangProxy(project, zone, 'p-hang', false);
    expect((await requestViaProxy(proxy, `${target.url}/unhung`)).status).toBe(200);
  });

  it('leak: the target sees X-Forwarded-For with the client address and a Via header', async () => {
    const proxy = await running('p-leak');
    await admin.leakProxy(project, zone, 'p-leak', true);
    const seen = JSON.parse((await requestViaProxy(proxy, `${target.url}/leak`)).body);
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers.via).toBe('1.1 proxyplane');
    await admin.leakProxy(project, zone, 'p-leak', false);
    const clean = JSON.parse((await requestViaProxy(proxy, `${target.url}/clean`)).body);
    expect(clean.headers['x-forwarded-for']).toBeUndefined();
  });

  it('proxy faults on an instance without a running proxy answer 409 proxy_not_running', async () => {
    await admin.setBootDelay(5000, 1);
    await clients.instances.insert({ project, zone, instanceResource: instanceBody('p-booting', { zone }) });
    await expect(admin.killProxy(project, zone, 'p-booting')).rejects.toMatchObject({
      status: 409,
      code: 'proxy_not_running',
    });
    await expect(admin.killProxy(project, zone, 'nope')).rejects.toMatchObject({
      status: 404,
      code: 'instance_not_found',
    });
  });
});

describe('boot delay, backdating, unreachable zones', () => {
  it('a slow boot for the next insert keeps it PROVISIONING/STAGING while others boot normally', async () => {
    await admin.setBootDelay(8000, 1);
    await clients.instances.insert({ project, zone, instanceResource: instanceBody('b-slow', { zone }) });
    await running('b-normal');
    expect(['PROVISIONING', 'STAGING']).toContain(await status('b-slow'));
    expect((await admin.faults()).slowBoots).toEqual([]);
  });

  it('the emulator-wide boot delay changes for every later insert', async () => {
    await admin.setBootDelay(10_000);
    expect((await admin.faults()).bootDelayMs).toBe(10_000);
    await clients.instances.insert({ project, zone, instanceResource: instanceBody('b-wide', { zone }) });
    await new Promise((r) => setTimeout(r, 400));
    expect(['PROVISIONING', 'STAGING']).toContain(await status('b-wide'));
    await admin.setBootDelay(100);
  });

  it('backdating moves creationTimestamp, which list filters then see', async () => {
    await running('g-old');
    await running('g-new');
    const old = await admin.backdate(project, zone, 'g-old', { ageMs: 3_600_000 });
    const [vm] = await clients.instances.get({ project, zone, instance: 'g-old' });
    expect(vm.creationTimestamp).toBe(old.creationTimestamp);
    expect(Date.now() - Date.parse(vm.creationTimestamp!)).toBeGreaterThanOrEqual(3_600_000);
    const cutoff = new Date(Date.now() - 600_000).toISOString();
    const [older] = await clients.instances.list({
      project,
      zone,
      filter: `creationTimestamp < "${cutoff}"`,
    });
    expect(older.map((i) => i.name)).toEqual(['g-old']);
  });

  it('an unreachable zone goes to unreachables with returnPartialSuccess, else carries an UNREACHABLE warning', async () => {
    await running('u-a', 'us-central1-a');
    await running('u-b', 'us-east1-b');
    await admin.setUnreachableZones(['us-east1-b']);
    // compute 6.x only offers the paged iterator, which never surfaces `unreachables`: read the wire too
    const raw = (await (
      await fetch(`${emu.url}/compute/v1/projects/${project}/aggregated/instances?returnPartialSuccess=true`)
    ).json()) as { unreachables?: string[]; items: Record<string, { instances?: Array<{ name: string }> }> };
    expect(raw.unreachables).toEqual(['zones/us-east1-b']);
    expect(Object.values(raw.items).flatMap((s) => s.instances?.map((i) => i.name) ?? [])).toEqual(['u-a']);

    const seen: Record<string, { names: string[]; warning?: string | null }> = {};
    for await (const [scope, list] of clients.instances.aggregatedListAsync({ project })) {
      seen[scope] = { names: (list.instances ?? []).map((i) => i.name!), warning: list.warning?.code };
    }
    expect(seen['zones/us-central1-a']?.names).toEqual(['u-a']);
    expect(seen['zones/us-east1-b']).toEqual({ names: [], warning: 'UNREACHABLE' });
  });
});

describe('counters and reset', () => {
  it('counts requests per operation, including failed ones, and resets', async () => {
    await admin.resetCounters();
    await running('n-count');
    await clients.instances.get({ project, zone, instance: 'missing' }).catch(() => undefined);
    const counters = await admin.counters();
    expect(counters).toMatchObject({ insert: 1, get: 2, delete: 0, list: 0, aggregatedList: 0 });
    expect(counters.operationsWait).toBeGreaterThanOrEqual(1);
    expect(counters.total).toBe(
      counters.insert + counters.get + counters.operationsWait + counters.operationsGet,
    );
    await admin.reset();
    expect((await admin.counters()).total).toBe(0);
    expect(await admin.instances()).toEqual([]);
  });
});
