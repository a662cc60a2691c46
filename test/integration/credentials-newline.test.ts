// A credentials secret written the common way — `echo user:pass | gcloud secrets create --data-file=-`,
// so with a trailing newline — must give a working lease URL: the lease service and the emulated VM's
// proxy both read it through parseProxyCredentials, from the Secret Manager emulator with the real client,
// and a real request goes through the real forward proxy with the leased URL. The raw payload (what the
// readers used to hand on) is refused by that same proxy, so the test can fail.
import { createServer, type Server } from 'node:http';
import { Firestore } from '@google-cloud/firestore';
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fetchThroughProxy } from '../../docs/examples/crawler.js';
import { credentialsFromSecretManager } from '../../emulators/compute/secret-credentials.js';
import { createForwardProxy, type ForwardProxy } from '../../emulators/forward-proxy/proxy.js';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import type { LeaseApiRuntime } from '../../functions/api/src/leases/wiring.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { testProjectId } from '../support/emulators.js';
import { ADMIN_TOKEN, leaseTestApp, proxy, writeFleet } from '../support/leases.js';

const projectId = testProjectId('demo-nl');
const PAYLOAD = 'crawl:s3cr:et@\n';
let secretManager: Awaited<ReturnType<typeof startSecretManagerEmulator>>;
let client: SecretManagerServiceClient;
let forward: ForwardProxy;
let page: Server;
let pageUrl: string;
let db: Firestore;
let leases: LeaseApiRuntime | undefined;

beforeAll(async () => {
  secretManager = await startSecretManagerEmulator({ log: () => {} });
  client = createSecretManagerClient(`${secretManager.host}:${secretManager.port}`);
  const parent = `projects/${projectId}`;
  await client.createSecret({ parent, secretId: 'nl-creds', secret: { replication: { automatic: {} } } });
  await client.addSecretVersion({
    parent: `${parent}/secrets/nl-creds`,
    payload: { data: Buffer.from(PAYLOAD) },
  });
  // The emulated VM's boot: the proxy gets what the resolver read from the secret.
  const vmCredentials = await credentialsFromSecretManager(client)(
    `${parent}/secrets/nl-creds/versions/latest`,
  );
  forward = createForwardProxy({ host: '127.0.0.1', credentials: vmCredentials });
  await forward.listen();
  page = createServer((_req, res) => res.end('through the fleet'));
  await new Promise<void>((ok) => page.listen(0, '127.0.0.1', ok));
  pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}/`;
  db = new Firestore({ projectId });
  const p = proxy('nl-1', { external: true });
  await writeFleet(db, [
    {
      ...p,
      spec: {
        ...p.spec,
        mode: 'external',
        endpoint: { host: '127.0.0.1', port: forward.port },
        credentialsRef: { secret: 'nl-creds', version: 'latest' },
      } as typeof p.spec,
    },
  ]);
}, 60_000);

afterAll(async () => {
  await leases?.stop();
  await db?.terminate();
  await forward?.close();
  await new Promise((ok) => page?.close(ok));
  await client?.close();
  await secretManager?.stop();
});

it('a secret with a trailing newline gives a lease URL that works through the proxy', async () => {
  const built = leaseTestApp({
    firestore: new Firestore({ projectId }),
    clock: systemClock,
    secrets: new SecretManagerSecretReader(client, projectId),
    lease: {},
  });
  leases = built.leases;
  const res = await built.app.request('/v1/leases', {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(res.status).toBe(201);
  const grant = (await res.json()) as { proxy: { url: string } };
  expect(grant.proxy.url).toBe(`http://crawl:s3cr%3Aet%40@127.0.0.1:${forward.port}`);
  expect(await fetchThroughProxy(grant.proxy.url, pageUrl, 10_000)).toEqual({
    status: 200,
    body: 'through the fleet',
  });

  // The raw payload as a password (what used to be handed on) is refused by the same proxy.
  const raw = `http://crawl:${encodeURIComponent('s3cr:et@\n')}@127.0.0.1:${forward.port}`;
  expect((await fetchThroughProxy(raw, pageUrl, 10_000)).status).toBe(407);
});
