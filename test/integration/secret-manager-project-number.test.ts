// On GCP, Secret Manager answers every name — GetSecretVersion's, AccessSecretVersion's, a notification's
// secretId and versionId — with the project NUMBER, however the caller spelled the project. The emulator
// does the same for a project given a number (`projectNumbers`), so this walks the names the plane takes
// from the API through everything that reads them: the version reconcile resolves and puts in a VM's
// metadata (spec hash, the default startup script, status.servedCredentials), the VM reading it at boot,
// and the rotation function's parse of a notification.
import { type Message, PubSub, type Subscription } from '@google-cloud/pubsub';
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
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import { renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import { servedRefOf } from '../../shared/src/domain/served-credentials.js';
import { parseSecretEvent } from '../../shared/src/messages/secret-event.js';
import { clearProject, testProjectId } from '../support/emulators.js';

const project = testProjectId('demo-pn');
const number = '123456789012';
const zone = 'europe-west1-d';
const pubsub = new PubSub({ projectId: project });
const received: Message[] = [];
let sub: Subscription;
let secretManager: SecretManagerEmulator;
let client: ReturnType<typeof createSecretManagerClient>;
let emu: ComputeEmulator;
let clients: ReturnType<typeof computeClients>;
let target: EchoTarget;

async function notification(pred: (m: Message) => boolean): Promise<Message> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const found = received.find(pred);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no matching notification');
}

beforeAll(async () => {
  target = await startEchoTarget();
  const [topic] = await pubsub.createTopic('secret-events');
  [sub] = await topic.createSubscription('secret-events-pn');
  sub.on('message', (m: Message) => {
    m.ack();
    received.push(m);
  });
  secretManager = await startSecretManagerEmulator({
    pubsub,
    projectNumbers: { [project]: number },
    log: () => {},
  });
  client = createSecretManagerClient(`${secretManager.host}:${secretManager.port}`);
  await client.createSecret({
    parent: `projects/${project}`,
    secretId: 'proxy-creds',
    secret: {
      replication: { automatic: {} },
      topics: [{ name: `projects/${project}/topics/secret-events` }],
    },
  });
  await client.addSecretVersion({
    parent: `projects/${project}/secrets/proxy-creds`,
    payload: { data: Buffer.from('crawler:first-password') },
  });
  emu = await startComputeEmulator({
    bootDelayMs: 50,
    deleteDelayMs: 50,
    addressRange: { first: '127.61.0.2', last: '127.61.255.254' },
    secretManagerEndpoint: `${secretManager.host}:${secretManager.port}`,
    log: () => {},
  });
  clients = computeClients(emu.endpoint);
});

afterAll(async () => {
  await sub?.close();
  await clients?.close();
  await emu?.stop();
  await client?.close();
  await secretManager?.stop();
  await target?.close();
  await pubsub.close();
  await clearProject(project);
});

describe('Secret Manager names carrying the project number, as on GCP', () => {
  it('the resolved version names the number; the plane reads it by secret id and a VM booted with it serves', async () => {
    const name = await new SecretManagerSecretReader(client, project).resolve({
      secret: 'proxy-creds',
      version: 'latest',
    });
    expect(name).toBe(`projects/${number}/secrets/proxy-creds/versions/1`);
    expect(servedRefOf(name)).toEqual({ secret: 'proxy-creds', version: '1' });
    expect(renderDefaultCloudInit({ port: 3128, credentialsSecret: name })).toContain(name);
    // Either spelling reads the same version.
    await expect(
      new SecretManagerSecretReader(client, number).access({ secret: 'proxy-creds', version: '1' }),
    ).resolves.toBe('crawler:first-password');

    // What reconcile puts in the VM's metadata is that name; the VM reads its credentials with it.
    const [op] = await clients.instances.insert({
      project,
      zone,
      instanceResource: instanceBody('pn-a', { zone, credentialsSecret: name }),
    });
    await waitForOperation(clients.zoneOps, project, zone, operationOf(op).name!);
    const [vm] = await clients.instances.get({ project, zone, instance: 'pn-a' });
    const proxy = { host: vm.networkInterfaces![0]!.networkIP!, port: 3128 };
    const auth = { user: 'crawler', pass: 'first-password' };
    expect((await requestViaProxy(proxy, `${target.url}/pn`, { auth })).status).toBe(200);
  });

  it('a notification names the number; the rotation parse still finds the secret and version', async () => {
    await client.addSecretVersion({
      parent: `projects/${project}/secrets/proxy-creds`,
      payload: { data: Buffer.from('crawler:second-password') },
    });
    const added = await notification(
      (m) =>
        m.attributes.eventType === 'SECRET_VERSION_ADD' && m.attributes.versionId?.endsWith('/2') === true,
    );
    expect(added.attributes).toMatchObject({
      secretId: `projects/${number}/secrets/proxy-creds`,
      versionId: `projects/${number}/secrets/proxy-creds/versions/2`,
    });
    expect(parseSecretEvent(added.attributes)).toMatchObject({
      kind: 'event',
      secret: 'proxy-creds',
      version: '2',
    });
  });
});
