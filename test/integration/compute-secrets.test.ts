// Instances read their proxy credentials from Secret Manager at boot, as the deployed startup script
// does: here the compute emulator uses the real @google-cloud/secret-manager client against our
// Secret Manager emulator. The value never appears in the instance's metadata.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComputeEmulator, startComputeEmulator } from '../../emulators/compute/server.js';
import {
  computeClients,
  instanceBody,
  operationOf,
  waitForOperation,
} from '../../emulators/compute/testing.js';
import { type EchoTarget, requestViaProxy, startEchoTarget } from '../../emulators/forward-proxy/testing.js';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';

const project = 'demo-compute-secrets';
const zone = 'europe-west1-c';
let secretManager: SecretManagerEmulator;
let smClient: ReturnType<typeof createSecretManagerClient>;
let emu: ComputeEmulator;
let clients: ReturnType<typeof computeClients>;
let target: EchoTarget;

beforeAll(async () => {
  target = await startEchoTarget();
  secretManager = await startSecretManagerEmulator({ log: () => {} });
  smClient = createSecretManagerClient(`${secretManager.host}:${secretManager.port}`);
  await smClient.createSecret({
    parent: `projects/${project}`,
    secretId: 'proxy-creds',
    secret: { replication: { automatic: {} } },
  });
  await smClient.addSecretVersion({
    parent: `projects/${project}/secrets/proxy-creds`,
    payload: { data: Buffer.from('crawler:first-password') },
  });
  emu = await startComputeEmulator({
    bootDelayMs: 50,
    deleteDelayMs: 50,
    addressRange: { first: '127.8.0.2', last: '127.8.255.254' },
    secretManagerEndpoint: `${secretManager.host}:${secretManager.port}`,
    // A missing secret is read 20 times before the VM runs without a proxy: 10 ms apart, not 2 s.
    credentialRetryDelayMs: 10,
  });
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await clients?.close();
  await emu?.stop();
  await smClient?.close();
  await secretManager?.stop();
  await target?.close();
});

async function boot(name: string, secret: string) {
  const [op] = await clients.instances.insert({
    project,
    zone,
    instanceResource: instanceBody(name, { zone, credentialsSecret: secret }),
  });
  await waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!);
  const [vm] = await clients.instances.get({ project, zone, instance: name });
  return { vm, proxy: { host: vm.networkInterfaces![0]!.networkIP!, port: 3128 } };
}

describe('credentials from Secret Manager', () => {
  it('the proxy answers the secret’s credentials, which never appear in metadata', async () => {
    const { vm, proxy } = await boot('sm-a', `projects/${project}/secrets/proxy-creds/versions/1`);
    expect(JSON.stringify(vm)).not.toContain('first-password');
    const ok = await requestViaProxy(proxy, `${target.url}/a`, {
      auth: { user: 'crawler', pass: 'first-password' },
    });
    expect(ok.status).toBe(200);
    expect((await requestViaProxy(proxy, `${target.url}/a`)).status).toBe(407);
  });

  it('reads `latest` at boot: a rotation reaches an instance when it boots again', async () => {
    const { proxy } = await boot('sm-latest', `projects/${project}/secrets/proxy-creds/versions/latest`);
    await smClient.addSecretVersion({
      parent: `projects/${project}/secrets/proxy-creds`,
      payload: { data: Buffer.from('crawler:second-password') },
    });
    const second = { user: 'crawler', pass: 'second-password' };
    expect((await requestViaProxy(proxy, `${target.url}/b`, { auth: second })).status).toBe(407);

    const [stop] = await clients.instances.stop({ project, zone, instance: 'sm-latest' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(stop).name!);
    const [start] = await clients.instances.start({ project, zone, instance: 'sm-latest' });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(start).name!);
    expect((await requestViaProxy(proxy, `${target.url}/b`, { auth: second })).status).toBe(200);
  });

  it('a secret that does not exist leaves the instance RUNNING with no proxy (fail closed)', async () => {
    const { vm, proxy } = await boot('sm-missing', `projects/${project}/secrets/nope/versions/1`);
    expect(vm.status).toBe('RUNNING');
    await expect(requestViaProxy(proxy, `${target.url}/c`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(emu.admin.instance(project, zone, 'sm-missing').proxy.error).toMatch(/not found/);
  });
});
