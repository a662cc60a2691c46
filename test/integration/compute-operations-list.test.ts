// zoneOperations.list on the Compute emulator, through the real @google-cloud/compute client, and what
// the gce provider makes of it: an insert that GCE accepted and then failed on quota (the async quota
// fault) is found by GceProvider.lastCreateFailure — without the list, reconcile re-inserted forever.
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
import { makeGceProvider } from '../../shared/src/adapters/gce/clients.js';
import type { InstanceRequest } from '../../shared/src/domain/reconcile/types.js';
import { instanceRequest } from '../support/instance-request.js';

const project = 'demo-compute-ops-list';
const zone = 'us-central1-a';
const link = (name: string) =>
  `https://www.googleapis.com/compute/v1/projects/${project}/zones/${zone}/instances/${name}`;
let emu: ComputeEmulator;
let admin: ComputeAdminClient;
let clients: ReturnType<typeof computeClients>;
let gce: ReturnType<typeof makeGceProvider>;

beforeAll(async () => {
  emu = await startComputeEmulator({ projectId: project, bootDelayMs: 50, deleteDelayMs: 50 });
  admin = new ComputeAdminClient(emu.url);
  clients = computeClients(emu.endpoint);
  gce = makeGceProvider({
    project,
    computeEndpoint: emu.endpoint,
    retry: { attempts: 2, baseMs: 1, maxMs: 5 },
  });
});

afterAll(async () => {
  await gce?.close();
  await clients?.close();
  await emu?.stop();
});

afterEach(async () => {
  await admin.reset();
});

async function insert(name: string) {
  const [lro] = await clients.instances.insert({
    project,
    zone,
    instanceResource: instanceBody(name, { zone }),
  });
  return waitForOperation(clients.zoneOps, project, zone, operationOf(lro).name!);
}

describe('zoneOperations.list', () => {
  it('filters on operationType and targetLink, pages with maxResults, orders newest first', async () => {
    for (const name of ['ops-a', 'ops-b', 'ops-c']) await insert(name);
    const [del] = await clients.instances.delete({ project, zone, instance: 'ops-a' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(del).name!);

    const [inserts] = await clients.zoneOps.list(
      { project, zone, filter: '(operationType = "insert")' },
      { autoPaginate: false },
    );
    expect(inserts.map((op) => op.targetLink).sort()).toEqual(['ops-a', 'ops-b', 'ops-c'].map(link));

    const [forB] = await clients.zoneOps.list(
      { project, zone, filter: `(operationType = "insert") AND (targetLink = "${link('ops-b')}")` },
      { autoPaginate: false },
    );
    expect(forB).toHaveLength(1);
    expect(forB[0]).toMatchObject({ operationType: 'insert', status: 'DONE', targetLink: link('ops-b') });

    const [first, , raw] = await clients.zoneOps.list(
      { project, zone, maxResults: 3 },
      { autoPaginate: false },
    );
    expect(first).toHaveLength(3);
    const token = (raw as { nextPageToken?: string }).nextPageToken;
    expect(token).toBeTruthy();
    const [rest] = await clients.zoneOps.list(
      { project, zone, maxResults: 3, pageToken: token },
      { autoPaginate: false },
    );
    expect([...first, ...rest].map((op) => op.name).sort()).toEqual(
      (await clients.zoneOps.list({ project, zone }, { autoPaginate: false }))[0].map((op) => op.name).sort(),
    );
    expect(rest).toHaveLength(1);

    const [newest] = await clients.zoneOps.list(
      { project, zone, orderBy: 'creationTimestamp desc', maxResults: 1 },
      { autoPaginate: false },
    );
    expect(newest[0]).toMatchObject({ operationType: 'delete', targetLink: link('ops-a') });

    // As GCE: a sort order beside a filter is refused (a caller pages instead).
    const both = await clients.zoneOps
      .list(
        { project, zone, filter: '(operationType = "insert")', orderBy: 'creationTimestamp desc' },
        { autoPaginate: false },
      )
      .catch((e: unknown) => e);
    expect(gceErrorOf(both)).toMatchObject({
      httpStatus: 400,
      message: expect.stringContaining(
        'Specifying both a list filter and sort order is not currently supported',
      ),
    });
  });

  it('answers 400 for a filter on a field operations do not have, and for an unknown zone', async () => {
    const bad = await clients.zoneOps
      .list({ project, zone, filter: 'machineType = "x"' }, { autoPaginate: false })
      .catch((e: unknown) => e);
    expect(gceErrorOf(bad)).toMatchObject({ httpStatus: 400, message: expect.stringContaining('filter') });
    const unknown = await clients.zoneOps
      .list({ project, zone: 'mars-north1-a' }, { autoPaginate: false })
      .catch((e: unknown) => e);
    expect(gceErrorOf(unknown)).toMatchObject({
      httpStatus: 400,
      message: expect.stringContaining('Unknown zone'),
    });
  });
});

describe('GceProvider.lastCreateFailure against the emulator', () => {
  const request = (name: string): InstanceRequest =>
    instanceRequest({ name, proxyName: name, uid: '00000000-0000-4000-8000-00000000000a', zone });

  it('finds the insert that failed on quota after it was accepted (async quota fault)', async () => {
    await admin.injectQuota({ count: 1, mode: 'async', metric: 'CPUS', limit: 8 });
    const { providerId } = await gce.provider.create(request('pp-async-quota'));
    // The Operation fails right after the insert answered; the instance never exists.
    const deadline = Date.now() + 10_000;
    let failure = await gce.provider.lastCreateFailure(providerId);
    while (failure === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      failure = await gce.provider.lastCreateFailure(providerId);
    }
    expect(failure).toMatchObject({ kind: 'quota' });
    expect(await gce.provider.get(providerId)).toBeNull();
  });

  it('finds the insert that failed on a stockout (ZONE_RESOURCE_POOL_EXHAUSTED, HTTP 503): quota, not transient', async () => {
    await admin.injectQuota({ count: 1, mode: 'stockout' });
    const { providerId } = await gce.provider.create(request('pp-stockout'));
    const deadline = Date.now() + 10_000;
    let failure = await gce.provider.lastCreateFailure(providerId);
    while (failure === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      failure = await gce.provider.lastCreateFailure(providerId);
    }
    expect(failure).toMatchObject({
      kind: 'quota',
      message: expect.stringContaining('ZONE_RESOURCE_POOL_EXHAUSTED'),
    });
    expect(await gce.provider.get(providerId)).toBeNull();
  });

  it('reports nothing for an insert that succeeded', async () => {
    const { providerId } = await gce.provider.create(request('pp-fine'));
    await expect(gce.provider.lastCreateFailure(providerId)).resolves.toBeNull();
  });
});
