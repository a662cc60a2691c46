// The real @google-cloud/secret-manager client against our emulator: the whole lifecycle the plane uses,
// and every error as the client surfaces it (REST fallback: `code` = HTTP status, the canonical status
// name in the JSON body of `message`).
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { crc32c } from '../../shared/src/adapters/secret-manager/crc32c.js';
import { testProjectId } from '../support/emulators.js';

type Emulator = Awaited<ReturnType<typeof startSecretManagerEmulator>>;

/** What a caller of the client sees when a call fails. */
async function failure(p: Promise<unknown>): Promise<{ code: unknown; status: string; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { code?: unknown; message: string };
    const body = JSON.parse(e.message) as { error: { status: string; message: string } };
    return { code: e.code, status: body.error.status, message: body.error.message };
  }
  throw new Error('expected the call to fail');
}

describe('Secret Manager emulator driven by SecretManagerServiceClient', () => {
  const project = testProjectId();
  const parent = `projects/${project}`;
  const secretName = `${parent}/secrets/proxy-creds`;
  let emulator: Emulator;
  let client: SecretManagerServiceClient;

  /** What `latest` resolves to, and its payload. */
  const accessLatest = async () => {
    const [v] = await client.accessSecretVersion({ name: `${secretName}/versions/latest` });
    return { name: v.name, payload: Buffer.from(v.payload!.data as Uint8Array).toString() };
  };

  beforeAll(async () => {
    emulator = await startSecretManagerEmulator({ log: () => {} });
    client = createSecretManagerClient(`${emulator.host}:${emulator.port}`);
  });
  afterAll(async () => {
    await client.close();
    await emulator.stop();
  });

  it('creates a secret with a notification topic, adds versions and reads them back', async () => {
    const [secret] = await client.createSecret({
      parent,
      secretId: 'proxy-creds',
      secret: {
        replication: { automatic: {} },
        topics: [{ name: `${parent}/topics/secret-events` }],
        labels: { app: 'pp' },
      },
    });
    expect(secret).toMatchObject({
      name: secretName,
      topics: [{ name: `${parent}/topics/secret-events` }],
      labels: { app: 'pp' },
    });
    expect(secret.etag).toMatch(/^".+"$/);

    const first = Buffer.from('alice:first-Pa55');
    const [v1] = await client.addSecretVersion({
      parent: secretName,
      payload: { data: first, dataCrc32c: crc32c(first) },
    });
    expect(v1).toMatchObject({
      name: `${secretName}/versions/1`,
      state: 'ENABLED',
      clientSpecifiedPayloadChecksum: true,
    });
    const [v2] = await client.addSecretVersion({
      parent: secretName,
      payload: { data: Buffer.from('alice:second-Pa55') },
    });
    expect(v2).toMatchObject({ name: `${secretName}/versions/2`, state: 'ENABLED' });

    const [latest] = await client.accessSecretVersion({ name: `${secretName}/versions/latest` });
    expect(latest.name).toBe(`${secretName}/versions/2`);
    expect(Buffer.from(latest.payload!.data as Uint8Array).toString()).toBe('alice:second-Pa55');
    const [one] = await client.accessSecretVersion({ name: `${secretName}/versions/1` });
    expect(Buffer.from(one.payload!.data as Uint8Array).toString()).toBe('alice:first-Pa55');
    expect(Number(one.payload!.dataCrc32c)).toBe(crc32c(first));

    const [got] = await client.getSecret({ name: secretName });
    expect(got).toMatchObject({ name: secretName, replication: { automatic: {} } });
    const [version] = await client.getSecretVersion({ name: `${secretName}/versions/latest` });
    expect(version).toMatchObject({ name: `${secretName}/versions/2`, state: 'ENABLED' });
    const [versions] = await client.listSecretVersions({ parent: secretName });
    expect(versions.map((v) => v.name)).toEqual([`${secretName}/versions/2`, `${secretName}/versions/1`]);
  });

  it('lists secrets page by page', async () => {
    for (const id of ['page-a', 'page-b']) {
      await client.createSecret({ parent, secretId: id, secret: { replication: { automatic: {} } } });
    }
    const [page1, , raw1] = await client.listSecrets({ parent, pageSize: 2 }, { autoPaginate: false });
    expect(page1.map((s) => s.name)).toEqual([`${parent}/secrets/page-a`, `${parent}/secrets/page-b`]);
    expect(raw1?.nextPageToken).toBeTruthy();
    const [page2, , raw2] = await client.listSecrets(
      { parent, pageSize: 2, pageToken: raw1!.nextPageToken! },
      { autoPaginate: false },
    );
    expect(page2.map((s) => s.name)).toEqual([secretName]);
    expect(raw2?.nextPageToken ?? '').toBe('');
    const [all] = await client.listSecrets({ parent });
    expect(all).toHaveLength(3);
  });

  it('disabling a version makes access fail FAILED_PRECONDITION; latest does not fall back', async () => {
    await client.disableSecretVersion({ name: `${secretName}/versions/2` });
    for (const v of ['2', 'latest']) {
      const f = await failure(client.accessSecretVersion({ name: `${secretName}/versions/${v}` }));
      expect(f).toEqual({
        code: 400,
        status: 'FAILED_PRECONDITION',
        message: `Secret Version [${secretName}/versions/2] is in DISABLED state.`,
      });
    }
    const [enabled] = await client.enableSecretVersion({ name: `${secretName}/versions/2` });
    expect(enabled.state).toBe('ENABLED');
    expect(await accessLatest()).toEqual({ name: `${secretName}/versions/2`, payload: 'alice:second-Pa55' });
  });

  it('destroying is terminal: no payload, destroyTime set, enable refused', async () => {
    const [destroyed] = await client.destroySecretVersion({ name: `${secretName}/versions/1` });
    expect(destroyed.state).toBe('DESTROYED');
    expect(destroyed.destroyTime).toBeTruthy();
    const access = await failure(client.accessSecretVersion({ name: `${secretName}/versions/1` }));
    expect(access).toMatchObject({ code: 400, status: 'FAILED_PRECONDITION' });
    expect(access.message).toContain('DESTROYED');
    const enable = await failure(client.enableSecretVersion({ name: `${secretName}/versions/1` }));
    expect(enable).toMatchObject({ code: 400, status: 'FAILED_PRECONDITION' });
  });

  it('a stale etag is FAILED_PRECONDITION, the current one works', async () => {
    const [v] = await client.getSecretVersion({ name: `${secretName}/versions/2` });
    await client.enableSecretVersion({ name: v.name!, etag: v.etag! }); // renews the etag even as a no-op
    const stale = await failure(client.disableSecretVersion({ name: v.name!, etag: v.etag! }));
    expect(stale).toMatchObject({ code: 400, status: 'FAILED_PRECONDITION' });
    const [now] = await client.getSecretVersion({ name: v.name! });
    const [disabled] = await client.disableSecretVersion({ name: v.name!, etag: now.etag! });
    expect(disabled).toMatchObject({ name: `${secretName}/versions/2`, state: 'DISABLED' });
    await client.enableSecretVersion({ name: v.name! });
  });

  it.each([
    [
      'get of an unknown secret',
      'getSecret',
      { name: `projects/P/secrets/nope` },
      'Secret [projects/P/secrets/nope] not found.',
    ],
    [
      'access latest of an unknown secret',
      'accessSecretVersion',
      { name: `projects/P/secrets/nope/versions/latest` },
      'Secret [projects/P/secrets/nope] not found or has no versions.',
    ],
    [
      'access of a version that does not exist',
      'accessSecretVersion',
      { name: `projects/P/secrets/proxy-creds/versions/9` },
      'Secret Version [projects/P/secrets/proxy-creds/versions/9] not found.',
    ],
  ] as const)('%s → 404 NOT_FOUND', async (_, method, request, message) => {
    const req = { name: request.name.replace('projects/P', parent) };
    const f = await failure((client[method] as (r: { name: string }) => Promise<unknown>).call(client, req));
    expect(f).toEqual({ code: 404, status: 'NOT_FOUND', message: message.replace('projects/P', parent) });
  });

  it('creating an existing secret → 409 ALREADY_EXISTS', async () => {
    const f = await failure(
      client.createSecret({ parent, secretId: 'proxy-creds', secret: { replication: { automatic: {} } } }),
    );
    expect(f).toEqual({
      code: 409,
      status: 'ALREADY_EXISTS',
      message: `Secret [${secretName}] already exists.`,
    });
  });

  it('an injected denial → 403 PERMISSION_DENIED, even for a secret that does not exist; lifted again', async () => {
    const admin = `${emulator.url}/emulator/v1/projects/${project}/secrets`;
    const put = await fetch(`${admin}/proxy-creds/denials`, {
      method: 'PUT',
      body: JSON.stringify({ permissions: ['secretmanager.versions.access'] }),
    });
    expect(put.status).toBe(200);
    await fetch(`${admin}/ghost/denials`, { method: 'PUT', body: '{}' });

    const f = await failure(client.accessSecretVersion({ name: `${secretName}/versions/latest` }));
    expect(f).toEqual({
      code: 403,
      status: 'PERMISSION_DENIED',
      message: `Permission 'secretmanager.versions.access' denied for resource '${secretName}/versions/latest' (or it may not exist).`,
    });
    // Only the denied permission: metadata is still readable.
    const [meta] = await client.getSecret({ name: secretName });
    expect(meta.name).toBe(secretName);
    expect(await failure(client.getSecret({ name: `${parent}/secrets/ghost` }))).toMatchObject({
      code: 403,
      status: 'PERMISSION_DENIED',
    });

    await fetch(`${admin}/proxy-creds/denials`, { method: 'DELETE' });
    expect(await accessLatest()).toEqual({ name: `${secretName}/versions/2`, payload: 'alice:second-Pa55' });
  });

  it('an injected fault → 503 UNAVAILABLE once, then service as usual', async () => {
    await fetch(`${emulator.url}/emulator/v1/projects/${project}/faults`, {
      method: 'POST',
      body: JSON.stringify({ status: 'UNAVAILABLE', count: 1, secret: 'proxy-creds' }),
    });
    const f = await failure(
      client.accessSecretVersion({ name: `${secretName}/versions/latest` }, { retry: null }),
    );
    expect(f).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
    expect(await accessLatest()).toEqual({ name: `${secretName}/versions/2`, payload: 'alice:second-Pa55' });
  });

  it('updates labels and topics with an update mask', async () => {
    const [updated] = await client.updateSecret({
      secret: { name: secretName, labels: { app: 'pp', tier: 'proxy' } },
      updateMask: { paths: ['labels'] },
    });
    expect(updated.labels).toEqual({ app: 'pp', tier: 'proxy' });
    expect(updated.topics).toEqual([{ name: `${parent}/topics/secret-events` }]);
  });

  it('deletes a secret, after which it is NOT_FOUND', async () => {
    await client.deleteSecret({ name: `${parent}/secrets/page-a` });
    expect(await failure(client.getSecret({ name: `${parent}/secrets/page-a` }))).toMatchObject({
      code: 404,
      status: 'NOT_FOUND',
    });
  });

  it('resets one project through the admin route', async () => {
    const res = await fetch(`${emulator.url}/emulator/v1/projects/${project}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    const [all] = await client.listSecrets({ parent });
    expect(all).toEqual([]);
  });
});
