// SecretManagerSecretReader (the Secrets port's adapter) on the real client against the emulator: each
// error kind comes from a real failure, not a shaped fake.
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { CachedSecretReader } from '../../shared/src/adapters/secret-manager/cached-reader.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { SecretAccessError } from '../../shared/src/ports/secrets.js';
import { testProjectId } from '../support/emulators.js';

type Emulator = Awaited<ReturnType<typeof startSecretManagerEmulator>>;

describe('SecretManagerSecretReader against the emulator', () => {
  const project = testProjectId();
  const admin = (path: string, method: string, body?: unknown) =>
    fetch(`${emulator.url}/emulator/v1/projects/${project}${path}`, {
      method,
      body: JSON.stringify(body ?? {}),
    });
  let emulator: Emulator;
  let client: SecretManagerServiceClient;
  let reader: SecretManagerSecretReader;

  beforeAll(async () => {
    emulator = await startSecretManagerEmulator({ log: () => {} });
    client = createSecretManagerClient(`${emulator.host}:${emulator.port}`);
    reader = new SecretManagerSecretReader(client, project);
    const parent = `projects/${project}`;
    await client.createSecret({ parent, secretId: 'creds', secret: { replication: { automatic: {} } } });
    await client.addSecretVersion({
      parent: `${parent}/secrets/creds`,
      payload: { data: Buffer.from('carol:v1') },
    });
    await client.addSecretVersion({
      parent: `${parent}/secrets/creds`,
      payload: { data: Buffer.from('carol:v2') },
    });
    await client.disableSecretVersion({ name: `${parent}/secrets/creds/versions/1` });
    await client.createSecret({ parent, secretId: 'empty', secret: { replication: { automatic: {} } } });
  });
  afterAll(async () => {
    await client.close();
    await emulator.stop();
  });

  it('reads latest and a pinned version, and resolves latest to its number', async () => {
    await expect(reader.access({ secret: 'creds', version: 'latest' })).resolves.toBe('carol:v2');
    await expect(reader.access({ secret: 'creds', version: '2' })).resolves.toBe('carol:v2');
    await expect(reader.resolve({ secret: 'creds', version: 'latest' })).resolves.toBe(
      `projects/${project}/secrets/creds/versions/2`,
    );
  });

  it.each([
    ['an unknown secret', { secret: 'missing', version: 'latest' }, 'not_found'],
    ['a secret without versions', { secret: 'empty', version: 'latest' }, 'not_found'],
    ['an unknown version', { secret: 'creds', version: '42' }, 'not_found'],
    ['a disabled version', { secret: 'creds', version: '1' }, 'failed_precondition'],
  ])('%s → %s', async (_, ref, kind) => {
    const err = await reader.access(ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretAccessError);
    expect(err).toMatchObject({
      kind,
      resource: `projects/${project}/secrets/${ref.secret}/versions/${ref.version}`,
    });
    expect((err as SecretAccessError).cause).toBeDefined();
  });

  it('a denied secret → permission_denied', async () => {
    await admin('/secrets/creds/denials', 'PUT', { permissions: ['secretmanager.versions.access'] });
    try {
      await expect(reader.access({ secret: 'creds', version: 'latest' })).rejects.toMatchObject({
        kind: 'permission_denied',
      });
    } finally {
      await admin('/secrets/creds/denials', 'DELETE');
    }
  });

  it('an unavailable Secret Manager → transient; the cache serves its last value through it', async () => {
    const clock = new ManualClock();
    const cached = new CachedSecretReader(reader, { ttlMs: 1_000, clock, staleIfErrorMs: 60_000 });
    await expect(cached.access({ secret: 'creds', version: 'latest' })).resolves.toBe('carol:v2');

    await admin('/faults', 'POST', { status: 'UNAVAILABLE', count: 2, secret: 'creds' });
    await expect(reader.access({ secret: 'creds', version: 'latest' })).rejects.toMatchObject({
      kind: 'transient',
    });
    clock.advance(5_000);
    await expect(cached.access({ secret: 'creds', version: 'latest' })).resolves.toBe('carol:v2');
    // Fault used up: the next refresh reaches the emulator again.
    await expect(reader.access({ secret: 'creds', version: 'latest' })).resolves.toBe('carol:v2');
  });
});
