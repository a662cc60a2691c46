// On GCP the plane's roles are granted on each secret (terraform/secrets.tf), none on the project, so a
// deleted secret takes its grants with it: a read answers PERMISSION_DENIED "(or it may not exist)", not
// NOT_FOUND. The emulator does the same given `perSecretIam`, so the path a deleted secret takes deployed
// is the one tested here: the reader's permission_denied, and reconcile's verdict on a version a VM still
// serves — `unknown` (the proxy waits its turn), where NOT_FOUND would say `revoked` (replaced at once;
// docs/gc-and-rotation.md). Also UNAUTHENTICATED (a rejected token): transient, like any blip.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SecretManagerEmulator,
  startSecretManagerEmulator,
} from '../../emulators/secret-manager/server.js';
import { SecretCloudInitResolver } from '../../functions/reconcile/src/cloud-init.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import { renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import { systemClock } from '../../shared/src/ports/clock.js';
import { SecretAccessError } from '../../shared/src/ports/secrets.js';
import { testProjectId } from '../support/emulators.js';

const project = testProjectId('demo-iam');
let perSecret: SecretManagerEmulator;
let client: ReturnType<typeof createSecretManagerClient>;
let reader: SecretManagerSecretReader;

beforeAll(async () => {
  perSecret = await startSecretManagerEmulator({ log: () => {}, perSecretIam: true });
  client = createSecretManagerClient(`${perSecret.host}:${perSecret.port}`);
  reader = new SecretManagerSecretReader(client, project);
  const parent = `projects/${project}`;
  await client.createSecret({ parent, secretId: 'creds', secret: { replication: { automatic: {} } } });
  await client.addSecretVersion({
    parent: `${parent}/secrets/creds`,
    payload: { data: Buffer.from('erin:v1') },
  });
});
afterAll(async () => {
  await client?.close();
  await perSecret?.stop();
});

describe('perSecretIam: a deleted secret as GCP answers it', () => {
  it('reads an existing secret; a missing or deleted one is PERMISSION_DENIED, not NOT_FOUND', async () => {
    await expect(reader.access({ secret: 'creds', version: '1' })).resolves.toBe('erin:v1');
    await expect(reader.access({ secret: 'never-created', version: 'latest' })).rejects.toMatchObject({
      kind: 'permission_denied',
    });

    const resolver = new SecretCloudInitResolver({
      secrets: reader,
      renderDefault: renderDefaultCloudInit,
      clock: systemClock,
      cacheTtlMs: 0,
    });
    const served = { secret: 'creds', version: '1' };
    await expect(resolver.versionState(served, { fresh: true })).resolves.toBe('readable');

    await client.deleteSecret({ name: `projects/${project}/secrets/creds` });
    const err = await reader.access(served).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretAccessError);
    expect(err).toMatchObject({ kind: 'permission_denied' });
    expect(((err as SecretAccessError).cause as Error).message).toContain('(or it may not exist)');
    // Says nothing about the version: the VM serving it is not replaced at once for it.
    await expect(resolver.versionState(served, { fresh: true })).resolves.toBe('unknown');
  });
});

describe('UNAUTHENTICATED: a rejected access token', () => {
  it('is transient (retried with the backoff every blip gets), not a denied read', async () => {
    const strict = await startSecretManagerEmulator({ log: () => {}, requireAuthorization: true });
    // The local client sends no token at all: the emulator answers 401 UNAUTHENTICATED, as the API does.
    const tokenless = createSecretManagerClient(`${strict.host}:${strict.port}`);
    try {
      const err = await new SecretManagerSecretReader(tokenless, project)
        .access({ secret: 'creds', version: 'latest' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SecretAccessError);
      expect(err).toMatchObject({ kind: 'transient', retryable: true });
      expect(((err as SecretAccessError).cause as Error).message).toContain('UNAUTHENTICATED');
    } finally {
      await tokenless.close();
      await strict.stop();
    }
  });
});
