// resolveCloudInit against the Secret Manager emulator through the real client: what a rotation does to
// the spec hash (a new version of the cloud-init or of the credentials replaces the instance), that the
// instance gets the resolved credentials VERSION (a reference), and how each failure is classified.
import type { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { SecretCloudInitResolver } from '../../functions/reconcile/src/cloud-init.js';
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import { renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import type { ManagedSpec, ProxyResource } from '../../shared/src/domain/proxy.js';
import type { CloudInitObservation } from '../../shared/src/domain/reconcile/types.js';
import { specHash } from '../../shared/src/domain/spec-hash.js';
import { ManualClock } from '../../shared/src/ports/clock.js';
import { aProxy, managedSpec } from '../../shared/src/testing/proxy-fixtures.js';
import { testProjectId } from '../support/emulators.js';

type Emulator = Awaited<ReturnType<typeof startSecretManagerEmulator>>;
type Managed = ProxyResource & { spec: ManagedSpec };

const project = testProjectId('demo-rci');
let emulator: Emulator;
let client: SecretManagerServiceClient;
let resolver: SecretCloudInitResolver;

const parent = `projects/${project}`;
const addVersion = (secret: string, value: string) =>
  client.addSecretVersion({ parent: `${parent}/secrets/${secret}`, payload: { data: Buffer.from(value) } });
const createSecret = async (secret: string, value: string) => {
  await client.createSecret({ parent, secretId: secret, secret: { replication: { automatic: {} } } });
  await addVersion(secret, value);
};
const proxy = (over: Record<string, unknown>) => aProxy({ spec: managedSpec(over) }) as Managed;
const hashOf = (p: Managed, o: CloudInitObservation) => {
  if (!o.ok) throw new Error(`not resolved: ${o.failure.message}`);
  return specHash(p.spec, o.digest, o.credentialsSecret);
};

beforeAll(async () => {
  emulator = await startSecretManagerEmulator({ log: () => {} });
  client = createSecretManagerClient(`${emulator.host}:${emulator.port}`);
  resolver = new SecretCloudInitResolver({
    secrets: new SecretManagerSecretReader(client, project),
    renderDefault: renderDefaultCloudInit,
    clock: new ManualClock(),
    cacheTtlMs: 300_000,
  });
  await createSecret('ci', '#!/bin/sh\necho v1\n');
  await createSecret('creds', 'carol:one');
});
afterAll(async () => {
  await client?.close();
  await emulator?.stop();
});

describe('cloud-init resolution on Secret Manager', () => {
  it('a new cloud-init version changes the hash on a fresh pass, not on a cached routine one', async () => {
    const p = proxy({ cloudInit: { secretRef: { secret: 'ci' } } });
    const before = await resolver.resolve(p, { fresh: true });
    expect(before).toMatchObject({ ok: true, script: '#!/bin/sh\necho v1\n', credentialsSecret: null });
    await addVersion('ci', '#!/bin/sh\necho v2\n');
    expect(hashOf(p, await resolver.resolve(p, { fresh: false }))).toBe(hashOf(p, before));
    const after = await resolver.resolve(p, { fresh: true });
    expect(after).toMatchObject({ ok: true, script: '#!/bin/sh\necho v2\n' });
    expect(hashOf(p, after)).not.toBe(hashOf(p, before));
  });

  it('the default script names the pinned credentials version; rotating the credentials changes the hash', async () => {
    const p = proxy({ credentialsRef: { secret: 'creds' }, port: 3128 });
    const before = await resolver.resolve(p, { fresh: true });
    expect(before).toMatchObject({ ok: true, credentialsSecret: `${parent}/secrets/creds/versions/1` });
    expect(before.ok && before.script).toContain(`${parent}/secrets/creds/versions/1`);
    expect(before.ok && before.script).not.toContain('carol:one');
    await addVersion('creds', 'carol:two');
    const after = await resolver.resolve(p, { fresh: true });
    expect(after).toMatchObject({ ok: true, credentialsSecret: `${parent}/secrets/creds/versions/2` });
    expect(hashOf(p, after)).not.toBe(hashOf(p, before));
  });

  it('a missing secret or a disabled version is invalid (CloudInitError), never a crash', async () => {
    expect(
      await resolver.resolve(proxy({ cloudInit: { secretRef: { secret: 'nope' } } }), { fresh: true }),
    ).toMatchObject({
      ok: false,
      failure: { kind: 'invalid' },
    });
    await client.disableSecretVersion({ name: `${parent}/secrets/ci/versions/1` });
    const pinned = proxy({ cloudInit: { secretRef: { secret: 'ci', version: '1' } } });
    expect(await resolver.resolve(pinned, { fresh: true })).toMatchObject({
      ok: false,
      failure: { kind: 'invalid' },
    });
  });

  it('a `latest` credentials reference whose newest version is disabled is invalid, not that version', async () => {
    // GetSecretVersion on `latest` answers the newest version whatever its state: a VM given it could not boot.
    await createSecret('creds-dis', 'dave:one');
    const p = proxy({ credentialsRef: { secret: 'creds-dis' }, port: 3128 });
    expect(await resolver.resolve(p, { fresh: true })).toMatchObject({
      ok: true,
      credentialsSecret: `${parent}/secrets/creds-dis/versions/1`,
    });
    const [added] = await addVersion('creds-dis', 'dave:two');
    await client.disableSecretVersion({ name: added.name! });
    const after = await resolver.resolve(p, { fresh: true });
    expect(after).toMatchObject({ ok: false, failure: { kind: 'invalid' } });
    expect(!after.ok && after.failure.message).toMatch(
      new RegExp(`^failed_precondition: .*${parent}/secrets/creds-dis/versions/2, which is DISABLED$`),
    );
    await client.destroySecretVersion({ name: added.name! });
    expect(await resolver.resolve(p, { fresh: true })).toMatchObject({
      ok: false,
      failure: { kind: 'invalid' },
    });
    // A reference pinned to the enabled version still resolves.
    const pinned = proxy({ credentialsRef: { secret: 'creds-dis', version: '1' }, port: 3128 });
    expect(await resolver.resolve(pinned, { fresh: true })).toMatchObject({ ok: true });
  });

  it('a spec that cannot produce a script is a spec failure (latched)', async () => {
    expect(await resolver.resolve(proxy({}), { fresh: true })).toMatchObject({
      ok: false,
      failure: { kind: 'spec' },
    });
  });
});
