// The Compute Engine emulator driven by the real @google-cloud/compute clients: the lifecycle the gce
// provider relies on, real proxies on the instances, and label-filtered aggregatedList with paging.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  httpsGetViaProxy,
  readAll,
  requestViaProxy,
  selfSignedCert,
  startEchoTarget,
  startTlsEchoTarget,
} from '../../emulators/forward-proxy/testing.js';
import { GceProvider } from '../../shared/src/adapters/gce/gce-provider.js';
import { providerIdOf } from '../../shared/src/adapters/gce/provider-id.js';

const project = 'demo-compute-emu';
const secrets = new Map([['projects/demo-compute-emu/secrets/proxy-a/versions/1', 'crawler:pa55:word']]);
const creds = { user: 'crawler', pass: 'pa55:word' };

let emu: ComputeEmulator;
let clients: ReturnType<typeof computeClients>;
let target: EchoTarget;
let tlsTarget: EchoTarget & { ca: string };

beforeAll(async () => {
  target = await startEchoTarget();
  tlsTarget = await startTlsEchoTarget(await selfSignedCert());
  emu = await startComputeEmulator({
    bootDelayMs: 150,
    // long enough that STOPPING is observable through the client on a loaded machine
    deleteDelayMs: 1500,
    stopDelayMs: 100,
    addressRange: { first: '127.1.0.2', last: '127.1.255.254' },
    resolveCredentials: async (name) => secrets.get(name) ?? null,
    // A missing secret is read 20 times before the VM runs without a proxy: 10 ms apart, not 2 s.
    credentialRetryDelayMs: 10,
  });
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await emu?.stop();
  await target?.close();
  await tlsTarget?.close();
});

async function insertAndWait(name: string, zone: string, body = instanceBody(name, { zone })) {
  const [op] = await clients.instances.insert({ project, zone, instanceResource: body });
  return waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!);
}

describe('instance lifecycle through the real client', () => {
  it('insert → wait → RUNNING with natIP → a real proxy with credentials → delete → 404', async () => {
    const zone = 'us-central1-a';
    const body = instanceBody('pp-lifecycle', {
      zone,
      labels: { 'managed-by': 'proxyplane', 'proxyplane-uid': 'uid-1', 'proxyplane-name': 'lifecycle' },
      credentialsSecret: 'projects/demo-compute-emu/secrets/proxy-a/versions/1',
      // the default startup script (stored, not run) whose squid.conf lets CONNECT reach the targets
      connectPorts: [target.port, tlsTarget.port],
    });
    emu.admin.setBootDelay(3000, 1); // long enough to observe the instance booting
    const [insert] = await clients.instances.insert({ project, zone, instanceResource: body });
    const started = operationOf(insert);
    expect(started.operationType).toBe('insert');
    expect(['PENDING', 'RUNNING']).toContain(started.status);

    const [booting] = await clients.instances.get({ project, zone, instance: 'pp-lifecycle' });
    expect(['PROVISIONING', 'STAGING']).toContain(booting.status);
    expect(booting.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP ?? null).toBeNull();

    const done = await waitForOperation(clients.zoneOps, project, zone, started.name!);
    expect(done.status).toBe('DONE');
    expect(done.error ?? null).toBeNull();

    const [vm] = await clients.instances.get({ project, zone, instance: 'pp-lifecycle' });
    expect(vm.status).toBe('RUNNING');
    expect(vm.id).toMatch(/^\d+$/);
    expect(Number.isNaN(Date.parse(vm.creationTimestamp!))).toBe(false);
    expect(vm.selfLink).toMatch(
      /\/projects\/demo-compute-emu\/zones\/us-central1-a\/instances\/pp-lifecycle$/,
    );
    expect(vm.zone?.split('/').pop()).toBe(zone);
    expect(vm.labels).toEqual(body.labels);
    expect(vm.tags?.items).toEqual(['proxyplane-proxy']);
    expect(vm.metadata?.items?.map((i) => i.key)).toEqual([
      'proxyplane-credentials-secret',
      'startup-script',
    ]);
    const natIP = vm.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP;
    expect(natIP).toMatch(/^127\.1\.\d+\.\d+$/);
    expect(vm.networkInterfaces?.[0]?.networkIP).toBe(natIP);

    const proxy = { host: natIP!, port: 3128 };
    const viaProxy = await requestViaProxy(proxy, `${target.url}/through-vm`, { auth: creds });
    expect(viaProxy.status).toBe(200);
    // the VM egresses from its own address, as a real VM does from its external IP
    expect(JSON.parse(viaProxy.body).remoteAddress).toBe(natIP);

    const tunnel = await connectViaProxy(proxy, `${target.host}:${target.port}`, { auth: creds });
    expect(tunnel.status).toBe(200);
    tunnel.socket.write('GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await readAll(tunnel.socket)).toContain('"url":"/tunnel"');

    const tls = await httpsGetViaProxy(
      proxy,
      { host: tlsTarget.host, port: tlsTarget.port, path: '/tls', ca: tlsTarget.ca },
      creds,
    );
    expect(tls.status).toBe(200);

    expect(
      (await requestViaProxy(proxy, `${target.url}/x`, { auth: { user: 'crawler', pass: 'nope' } })).status,
    ).toBe(407);
    expect((await connectViaProxy(proxy, `${target.host}:${target.port}`)).status).toBe(407);

    const [del] = await clients.instances.delete({ project, zone, instance: 'pp-lifecycle' });
    expect(operationOf(del).operationType).toBe('delete');
    const [stopping] = await clients.instances.get({ project, zone, instance: 'pp-lifecycle' });
    expect(stopping.status).toBe('STOPPING');
    await expect(requestViaProxy(proxy, `${target.url}/gone`, { auth: creds })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(del).name!);
    const missing = await clients.instances
      .get({ project, zone, instance: 'pp-lifecycle' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(missing)).toMatchObject({ httpStatus: 404, reason: 'notFound' });
  });

  it('runs an open proxy on the metadata port when no credentials secret is named', async () => {
    const zone = 'us-east1-b';
    await insertAndWait('pp-open', zone, instanceBody('pp-open', { zone, proxyPort: 8888 }));
    const [vm] = await clients.instances.get({ project, zone, instance: 'pp-open' });
    const natIP = vm.networkInterfaces![0]!.accessConfigs![0]!.natIP!;
    expect((await requestViaProxy({ host: natIP, port: 8888 }, `${target.url}/open`)).status).toBe(200);
    await expect(requestViaProxy({ host: natIP, port: 3128 }, `${target.url}/open`)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });

  it('fails closed when the named secret cannot be read: RUNNING, but the proxy refuses connections', async () => {
    const zone = 'us-east1-b';
    await insertAndWait(
      'pp-no-secret',
      zone,
      instanceBody('pp-no-secret', {
        zone,
        credentialsSecret: 'projects/demo-compute-emu/secrets/missing/versions/1',
      }),
    );
    const [vm] = await clients.instances.get({ project, zone, instance: 'pp-no-secret' });
    expect(vm.status).toBe('RUNNING');
    const natIP = vm.networkInterfaces![0]!.accessConfigs![0]!.natIP!;
    await expect(requestViaProxy({ host: natIP, port: 3128 }, `${target.url}/x`)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    expect(emu.admin.instance(project, zone, 'pp-no-secret').proxy.error).toMatch(/not found/);
  });

  it("lets CONNECT reach only its startup script's connect ports, as its squid would: 403 otherwise", async () => {
    const zone = 'us-central1-b';
    const natIPOf = async (name: string) => {
      const [vm] = await clients.instances.get({ project, zone, instance: name });
      return vm.networkInterfaces![0]!.accessConfigs![0]!.natIP!;
    };
    const credentialsSecret = 'projects/demo-compute-emu/secrets/proxy-a/versions/1';
    await insertAndWait(
      'pp-ports',
      zone,
      instanceBody('pp-ports', { zone, credentialsSecret, connectPorts: [tlsTarget.port] }),
    );
    // 443 besides the listed ports, always: the probe tunnels to the API there (squid-conf.ts).
    expect(emu.admin.instance(project, zone, 'pp-ports').connectPorts).toEqual([443, tlsTarget.port]);
    const proxy = { host: await natIPOf('pp-ports'), port: 3128 };

    // A listed port: the tunnel moves bytes (TLS inside it, end to end).
    const tls = await httpsGetViaProxy(
      proxy,
      { host: tlsTarget.host, port: tlsTarget.port, path: '/listed', ca: tlsTarget.ca },
      creds,
    );
    expect(tls.status).toBe(200);
    expect(tls.body).toContain('"url":"/listed"');
    // Any other port: 403 Forbidden, asked before credentials (squid's deny CONNECT !SSL_ports comes
    // before deny !authenticated).
    const refused = await connectViaProxy(proxy, `${target.host}:${target.port}`, { auth: creds });
    expect(refused.status).toBe(403);
    expect((await connectViaProxy(proxy, `${target.host}:${target.port}`)).status).toBe(403);
    // Plain HTTP (absolute-form) is not a CONNECT: not limited by the list.
    expect((await requestViaProxy(proxy, `${target.url}/plain`, { auth: creds })).status).toBe(200);

    // No startup script of ours: squid's default, 443 only.
    await insertAndWait('pp-no-script', zone, instanceBody('pp-no-script', { zone, credentialsSecret }));
    expect(emu.admin.instance(project, zone, 'pp-no-script').connectPorts).toEqual([443]);
    const bare = { host: await natIPOf('pp-no-script'), port: 3128 };
    expect((await connectViaProxy(bare, `${tlsTarget.host}:${tlsTarget.port}`, { auth: creds })).status).toBe(
      403,
    );
  });

  it("adds the emulator's hostConnectPorts to every VM's list (the local plane's API port, standing for the deployed API's 443)", async () => {
    // The local probe's BASIC handshake CONNECTs to the echo URL's port: deployed 443, which every VM's
    // squid allows; locally the API's port, which a spec without connectPorts does not list.
    const local = await startComputeEmulator({
      bootDelayMs: 50,
      deleteDelayMs: 50,
      addressRange: { first: '127.2.0.2', last: '127.2.255.254' },
      resolveCredentials: async (name) => secrets.get(name) ?? null,
      hostConnectPorts: [tlsTarget.port],
    });
    const localClients = computeClients(local.endpoint);
    try {
      const zone = 'us-central1-a';
      const credentialsSecret = 'projects/demo-compute-emu/secrets/proxy-a/versions/1';
      const [op] = await localClients.instances.insert({
        project,
        zone,
        instanceResource: instanceBody('pp-host-ports', { zone, credentialsSecret }),
      });
      await waitForOperation(localClients.zoneOps, project, zone, operationOf(op).name!);
      const view = local.admin.instance(project, zone, 'pp-host-ports');
      expect(view.connectPorts).toEqual([443, tlsTarget.port]);
      const proxy = { host: view.address, port: 3128 };
      const via = await connectViaProxy(proxy, `${tlsTarget.host}:${tlsTarget.port}`, { auth: creds });
      expect(via.status).toBe(200);
      via.socket.destroy();
      // Only those: any other port is still 403.
      expect((await connectViaProxy(proxy, `${target.host}:${target.port}`, { auth: creds })).status).toBe(
        403,
      );
    } finally {
      await localClients.close();
      await local.stop();
    }
  });

  it('answers 409 alreadyExists for a duplicate name and accepts get by numeric id', async () => {
    const zone = 'us-central1-b';
    await insertAndWait('pp-dup', zone);
    const dup = await clients.instances
      .insert({ project, zone, instanceResource: instanceBody('pp-dup', { zone }) })
      .catch((e: unknown) => e);
    expect(gceErrorOf(dup)).toMatchObject({ httpStatus: 409, reason: 'alreadyExists' });
    const [byName] = await clients.instances.get({ project, zone, instance: 'pp-dup' });
    const [byId] = await clients.instances.get({ project, zone, instance: String(byName.id) });
    expect(byId.name).toBe('pp-dup');
  });

  it('treats a retried insert or delete with the same requestId as the same request', async () => {
    const zone = 'us-central1-c';
    const requestId = '3f1a2b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b';
    const body = instanceBody('pp-retry', { zone });
    const [first] = await clients.instances.insert({ project, zone, instanceResource: body, requestId });
    const [again] = await clients.instances.insert({ project, zone, instanceResource: body, requestId });
    expect(operationOf(again).name).toBe(operationOf(first).name);
    expect(emu.admin.instances({ project, zone }).filter((i) => i.name === 'pp-retry')).toHaveLength(1);

    // a delete retried after it finished gets its Operation back, not a 404
    const deleteId = '9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a';
    await waitForOperation(clients.zoneOps, project, zone, operationOf(first).name!);
    const [del] = await clients.instances.delete({
      project,
      zone,
      instance: 'pp-retry',
      requestId: deleteId,
    });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(del).name!);
    const [delAgain] = await clients.instances.delete({
      project,
      zone,
      instance: 'pp-retry',
      requestId: deleteId,
    });
    expect(operationOf(delAgain).name).toBe(operationOf(del).name);
    expect(operationOf(delAgain).status).toBe('DONE');
  });

  it('refuses a second delete while the first runs (400 resourceNotReady), as GCE does; the gce provider takes it as going', async () => {
    const zone = 'us-central1-c';
    await insertAndWait('pp-twice', zone);
    const [del] = await clients.instances.delete({ project, zone, instance: 'pp-twice' });
    const again = await clients.instances
      .delete({ project, zone, instance: 'pp-twice' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(again)).toMatchObject({ httpStatus: 400, reason: 'resourceNotReady' });
    // The adapter the reconciler and GC delete through: "already being deleted" is success, not a failure.
    const provider = new GceProvider({
      project,
      instances: clients.instances,
      zoneOperations: clients.zoneOps,
    });
    await expect(provider.delete(providerIdOf({ zone, name: 'pp-twice' }))).resolves.toBe('deleting');
    const done = await waitForOperation(clients.zoneOps, project, zone, operationOf(del).name!);
    expect(done.error ?? null).toBeNull();
    const gone = await clients.instances
      .get({ project, zone, instance: 'pp-twice' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(gone)).toMatchObject({ httpStatus: 404 });
  });

  // GCE answers a delete during the creation with the same 400 resourceNotReady as a second delete: taken
  // for "already going", it would be dropped and the VM would come up RUNNING with nothing deleting it.
  it('refuses a delete while the insert Operation runs (400 resourceNotReady); the gce provider says not-ready', async () => {
    const zone = 'us-central1-c';
    const providerId = providerIdOf({ zone, name: 'pp-creating' });
    const provider = new GceProvider({
      project,
      instances: clients.instances,
      zoneOperations: clients.zoneOps,
    });
    emu.admin.setBootDelay(1500, 1);
    const [insert] = await clients.instances.insert({
      project,
      zone,
      instanceResource: instanceBody('pp-creating', { zone }),
    });
    const refused = await clients.instances
      .delete({ project, zone, instance: 'pp-creating' })
      .catch((e: unknown) => e);
    expect(gceErrorOf(refused)).toMatchObject({ httpStatus: 400, reason: 'resourceNotReady' });
    await expect(provider.delete(providerId)).resolves.toBe('not-ready');
    // Nothing was deleted: the creation finishes, and only then is the delete taken.
    const created = await waitForOperation(clients.zoneOps, project, zone, operationOf(insert).name!);
    expect(created.error ?? null).toBeNull();
    const [running] = await clients.instances.get({ project, zone, instance: 'pp-creating' });
    expect(running.status).toBe('RUNNING');
    await expect(provider.delete(providerId)).resolves.toBe('deleting');
    const [stopping] = await clients.instances.get({ project, zone, instance: 'pp-creating' });
    expect(stopping.status).toBe('STOPPING');
  });

  it('stops and starts through the API: TERMINATED has no natIP and no proxy, start brings both back', async () => {
    const zone = 'us-central1-f';
    await insertAndWait('pp-stop', zone);
    const [stop] = await clients.instances.stop({ project, zone, instance: 'pp-stop' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(stop).name!);
    const [stopped] = await clients.instances.get({ project, zone, instance: 'pp-stop' });
    expect(stopped.status).toBe('TERMINATED');
    expect(stopped.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP ?? null).toBeNull();
    const address = stopped.networkInterfaces![0]!.networkIP!;
    await expect(requestViaProxy({ host: address, port: 3128 }, `${target.url}/x`)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });

    const [start] = await clients.instances.start({ project, zone, instance: 'pp-stop' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(start).name!);
    const [running] = await clients.instances.get({ project, zone, instance: 'pp-stop' });
    expect(running.status).toBe('RUNNING');
    expect(running.networkInterfaces?.[0]?.accessConfigs?.[0]?.natIP).toBe(address);
    expect((await requestViaProxy({ host: address, port: 3128 }, `${target.url}/x`)).status).toBe(200);
  });
});

describe('aggregatedList with label filters', () => {
  const uid = 'uid-agg';
  const labelled = ['pp-agg-1', 'pp-agg-2', 'pp-agg-3'];
  const elsewhere = ['pp-agg-4', 'pp-agg-5'];

  beforeAll(async () => {
    const mine = { 'managed-by': 'proxyplane', 'proxyplane-uid': uid };
    const other = { 'managed-by': 'proxyplane', 'proxyplane-uid': 'someone-else' };
    await Promise.all([
      ...labelled.map((n) =>
        insertAndWait(n, 'us-east1-c', instanceBody(n, { zone: 'us-east1-c', labels: mine })),
      ),
      ...elsewhere.map((n) =>
        insertAndWait(n, 'europe-west1-b', instanceBody(n, { zone: 'europe-west1-b', labels: mine })),
      ),
      insertAndWait(
        'pp-other-1',
        'us-east1-c',
        instanceBody('pp-other-1', { zone: 'us-east1-c', labels: other }),
      ),
      insertAndWait(
        'pp-other-2',
        'europe-west1-b',
        instanceBody('pp-other-2', { zone: 'europe-west1-b', labels: other }),
      ),
      insertAndWait('pp-unlabelled', 'europe-west1-b'),
    ]);
  });

  async function aggregated(filter: string, maxResults: number) {
    const found: Array<{ zone: string; name: string }> = [];
    const before = emu.admin.counters().aggregatedList;
    for await (const [scope, list] of clients.instances.aggregatedListAsync({
      project,
      filter,
      maxResults,
      returnPartialSuccess: true,
    })) {
      for (const vm of list.instances ?? []) found.push({ zone: scope, name: vm.name! });
    }
    return { found, requests: emu.admin.counters().aggregatedList - before };
  }

  it.each([
    `labels.managed-by = proxyplane AND labels.proxyplane-uid = "${uid}"`,
    `(labels.managed-by = "proxyplane") (labels.proxyplane-uid = ${uid})`,
  ])('%s finds exactly the labelled instances across two zones, two per page', async (filter) => {
    const { found, requests } = await aggregated(filter, 2);
    expect(found.map((f) => f.name).sort()).toEqual([...labelled, ...elsewhere].sort());
    expect(new Set(found.map((f) => f.zone))).toEqual(new Set(['zones/us-east1-c', 'zones/europe-west1-b']));
    expect(requests).toBe(3);
  });

  it('finds every managed instance, and a per-zone list honours the same filter', async () => {
    const { found } = await aggregated('labels.managed-by = proxyplane', 500);
    expect(found.map((f) => f.name).sort()).toEqual(
      [...labelled, ...elsewhere, 'pp-other-1', 'pp-other-2'].sort(),
    );
    const [inZone] = await clients.instances.list({
      project,
      zone: 'europe-west1-b',
      filter: `labels.proxyplane-uid = "${uid}"`,
    });
    expect(inZone.map((vm) => vm.name).sort()).toEqual(elsewhere);
  });

  it('keeps projects apart', async () => {
    const names: string[] = [];
    for await (const [, list] of clients.instances.aggregatedListAsync({ project: 'another-project' })) {
      for (const vm of list.instances ?? []) names.push(vm.name!);
    }
    expect(names).toEqual([]);
    expect(emu.admin.instances({ project }).length).toBeGreaterThan(0);
  });
});
