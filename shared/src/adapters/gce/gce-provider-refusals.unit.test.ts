// Refusals our Compute emulator does not make, in GCE's REST error shape, through the real
// @google-cloud/compute client: a read refused 403 (IAM still propagating, the API disabled), and an
// insert refused 409 while no instance of that name exists (GCE names the boot disk after the instance,
// and a disk left over holds the name). A fixed-answer HTTP server is the whole fixture.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceRequest } from '../../domain/reconcile/types.js';
import { ProviderError } from '../../ports/provider.js';
import { makeGceProvider } from './clients.js';

const ZONE = 'europe-west1-b';
const NAME = 'pp-0123456789abcdef0123';

const request: InstanceRequest = {
  name: NAME,
  proxyName: 'eu-1',
  uid: '01234567-89ab-4def-8123-456789abcdef',
  zone: ZONE,
  machineType: 'e2-small',
  image: 'projects/debian-cloud/global/images/family/debian-12',
  port: 3128,
  protocol: 'http',
  startupScript: '#cloud-config\n',
  credentialsSecret: 'projects/acme/secrets/eu-creds/versions/4',
  specHash: '0123456789abcdef',
};

const gceError = (code: number, reason: string, message: string) => ({
  error: { code, message, errors: [{ message, domain: 'global', reason }] },
});

/** What the fixture answers: per method, a status and a JSON body. */
const answers: Record<'get' | 'insert', { status: number; body: unknown }> = {
  get: { status: 404, body: gceError(404, 'notFound', 'not found') },
  insert: { status: 200, body: {} },
};

describe('gce provider: refusals that must not be taken at face value', () => {
  const server = http.createServer((req, res) => {
    const answer = req.method === 'POST' ? answers.insert : answers.get;
    req.resume();
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  let gce: ReturnType<typeof makeGceProvider>;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    gce = makeGceProvider({
      project: 'acme',
      computeEndpoint: `127.0.0.1:${(server.address() as AddressInfo).port}`,
      serviceAccountEmail: 'vm@acme.iam.gserviceaccount.com',
      retry: { attempts: 1, baseMs: 1, maxMs: 1, attemptTimeoutMs: 5_000 },
    });
  });
  afterAll(async () => {
    await gce.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a read refused 403 is transient: retried, never a PermanentError latched on a serving proxy', async () => {
    answers.get = {
      status: 403,
      body: gceError(403, 'forbidden', "Required 'compute.instances.get' permission for 'projects/acme'"),
    };
    const err = await gce.provider.get(`zones/${ZONE}/instances/${NAME}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: 'transient', status: 403, reason: 'forbidden' });
    expect((err as Error).message).toContain("Required 'compute.instances.get' permission");
  });

  it('an insert refused 409 with no such instance is no create: it fails, naming the likely leftover disk', async () => {
    answers.insert = {
      status: 409,
      body: gceError(
        409,
        'alreadyExists',
        `The resource 'projects/acme/zones/${ZONE}/disks/${NAME}' already exists`,
      ),
    };
    answers.get = { status: 404, body: gceError(404, 'notFound', 'not found') };
    const err = await gce.provider.create(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: 'transient', status: 409 });
    expect((err as Error).message).toContain(`a boot disk ${NAME} left over?`);
  });

  it('an insert refused 409 because the instance exists (a duplicate delivery) is the create it asked for', async () => {
    answers.insert = {
      status: 409,
      body: gceError(
        409,
        'alreadyExists',
        `The resource 'projects/acme/zones/${ZONE}/instances/${NAME}' already exists`,
      ),
    };
    answers.get = {
      status: 200,
      body: { name: NAME, status: 'PROVISIONING', labels: {}, networkInterfaces: [] },
    };
    expect(await gce.provider.create(request)).toEqual({ providerId: `zones/${ZONE}/instances/${NAME}` });
  });
});
