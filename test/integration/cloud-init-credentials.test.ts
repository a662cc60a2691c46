// The startup script's boot-time credential fetch, run for real by bash: instance metadata item →
// metadata-server token → Secret Manager (our emulator, demanding a bearer token like the real API) →
// SHA-512 crypt password file. The secret value must never appear in the script's output.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecretManagerEmulator } from '../../emulators/secret-manager/server.js';
import { localClientOptions } from '../../shared/src/adapters/local-endpoints.js';
import { renderDefaultCloudInit } from '../../shared/src/domain/cloud-init/startup-script.js';
import { isRoot, toolsMissing } from '../support/debian-tools.js';
import { testProjectId } from '../support/emulators.js';
import {
  type FakeMetadata,
  runScriptFunctions,
  scratchDir,
  startFakeMetadata,
} from './cloud-init-support.js';

type Emulator = Awaited<ReturnType<typeof startSecretManagerEmulator>>;

const why = !isRoot() ? 'not root (chgrp proxy)' : await toolsMissing(['curl', 'jq', 'openssl', 'base64']);

describe.skipIf(why !== '')(`startup script credentials at boot${why ? ` (skipped: ${why})` : ''}`, () => {
  const project = testProjectId();
  const dir = scratchDir('pp-creds-');
  const scriptFile = join(dir, 'startup.sh');
  const passwd = join(dir, 'proxyplane.passwd');
  const password = 'S3cret-"quoted"\\back$lash';
  let emulator: Emulator;
  let client: SecretManagerServiceClient;
  let metadata: FakeMetadata;

  // A failed read is asked again (a grant takes minutes to reach Secret Manager): here twice, at once.
  const run = (commands = 'install_credentials "$PASSWD"', retry = { attempts: 2, seconds: 0 }) =>
    runScriptFunctions(scriptFile, commands, {
      PASSWD: passwd,
      PROXYPLANE_METADATA_URL: metadata.url,
      PROXYPLANE_SECRET_MANAGER_URL: `${emulator.url}/v1`,
      PROXYPLANE_SECRET_ATTEMPTS: String(retry.attempts),
      PROXYPLANE_SECRET_RETRY_SECONDS: String(retry.seconds),
    });
  const secret = (id: string) => `projects/${project}/secrets/${id}`;

  beforeAll(async () => {
    emulator = await startSecretManagerEmulator({ log: () => {}, requireAuthorization: true });
    // This emulator demands a bearer token, as the real API does: the seeding client sends a fake one.
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: 'ya29.seeding', expiry_date: Date.now() + 3_600_000 });
    const options = { ...localClientOptions(`${emulator.host}:${emulator.port}`), authClient: auth };
    // google-gax bundles its own google-auth-library: to the type checker they are two OAuth2Client classes.
    client = new SecretManagerServiceClient(
      options as unknown as ConstructorParameters<typeof SecretManagerServiceClient>[0],
    );
    metadata = await startFakeMetadata('ya29.fake-token');
    const add = async (id: string, value: string) => {
      await client
        .createSecret({
          parent: `projects/${project}`,
          secretId: id,
          secret: { replication: { automatic: {} } },
        })
        .catch(() => undefined);
      await client.addSecretVersion({ parent: secret(id), payload: { data: Buffer.from(value) } });
    };
    // `echo … | gcloud secrets versions add --data-file=-` leaves a newline: it must not matter.
    await add('proxy-creds', `alice:${password}\n`);
    await add('fallback', 'fallback-user:fallback-Pa55');
    await add('disabled', 'dora:disabled-Pa55');
    await client.disableSecretVersion({ name: `${secret('disabled')}/versions/1` });
    await add('malformed', 'no-colon-here-Pa55');
    writeFileSync(scriptFile, renderDefaultCloudInit({ port: 3128, credentialsSecret: secret('fallback') }));
  });
  afterAll(async () => {
    await client?.close();
    await emulator?.stop();
    await metadata?.stop();
  });

  /** The crypt(3) check basic_ncsa_auth makes: hashing the password with the stored salt gives the line. */
  const verifies = (line: string, user: string, pass: string) => {
    const [u, hash] = line.trim().split(':') as [string, string];
    const salt = hash.split('$')[2]!;
    const again = execFileSync('openssl', ['passwd', '-6', '-salt', salt, '-stdin'], { input: `${pass}\n` });
    return u === user && again.toString().trim() === hash;
  };

  it('reads the secret named in instance metadata and installs a SHA-512 crypt password file', async () => {
    metadata.credentialsSecret = `${secret('proxy-creds')}/versions/latest`;
    const r = await run();
    expect(r.stderr).toContain('credentials installed');
    expect(r.code).toBe(0);
    const line = readFileSync(passwd, 'utf8');
    expect(line).toMatch(/^alice:\$6\$[^$]+\$[^:\s]+\n$/);
    expect(verifies(line, 'alice', password)).toBe(true);
    expect(statSync(passwd).mode & 0o777).toBe(0o640);
    expect(r.stdout + r.stderr).not.toContain(password);
    expect(metadata.refused).toBe(0);
  });

  it('changes nothing on a re-run with the same secret', async () => {
    const before = readFileSync(passwd, 'utf8');
    const r = await run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('credentials unchanged');
    expect(readFileSync(passwd, 'utf8')).toBe(before);
  });

  it('falls back to the secret it was rendered with when the metadata item is missing', async () => {
    metadata.credentialsSecret = undefined;
    const r = await run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('instance metadata has no proxyplane-credentials-secret');
    expect(verifies(readFileSync(passwd, 'utf8'), 'fallback-user', 'fallback-Pa55')).toBe(true);
  });

  it.each([
    [
      'a disabled version',
      () => secret('disabled'),
      /HTTP 400 FAILED_PRECONDITION: .*DISABLED/,
      'disabled-Pa55',
    ],
    ['a secret that does not exist', () => secret('nope'), /HTTP 404 NOT_FOUND/, undefined],
    [
      'a payload without a colon',
      () => secret('malformed'),
      /must hold username:password/,
      'no-colon-here-Pa55',
    ],
    ['a name that is not a secret', () => 'projects/x/topics/y', /is not a Secret Manager secret/, undefined],
  ])('fails loudly on %s, reports it, and prints no value', async (_, name, message, value) => {
    metadata.credentialsSecret = name();
    metadata.guestAttributes.clear();
    const before = readFileSync(passwd, 'utf8');
    const r = await run();
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/proxyplane-startup: FATAL: /);
    expect(r.stderr).toMatch(message);
    expect(metadata.guestAttributes.get('proxyplane/startup')).toBe('failed');
    if (value) expect(r.stdout + r.stderr).not.toContain(value);
    expect(readFileSync(passwd, 'utf8')).toBe(before);
  });

  it('a permission failure says PERMISSION_DENIED', async () => {
    metadata.credentialsSecret = secret('proxy-creds');
    await fetch(`${emulator.url}/emulator/v1/projects/${project}/secrets/proxy-creds/denials`, {
      method: 'PUT',
      body: '{}',
    });
    const r = await run();
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/HTTP 403 PERMISSION_DENIED: Permission 'secretmanager.versions.access' denied/);
    // Asked again before it gave up.
    expect(r.stderr).toMatch(/PERMISSION_DENIED.*\(attempt 1 of 2; again in 0 s\)/);
  });

  it('a grant that arrives while it waits is used: the VM serves, no reset needed', async () => {
    metadata.credentialsSecret = secret('proxy-creds');
    const denials = `${emulator.url}/emulator/v1/projects/${project}/secrets/proxy-creds/denials`;
    await fetch(denials, { method: 'PUT', body: '{}' });
    rmSync(passwd, { force: true });
    const running = run(undefined, { attempts: 5, seconds: 4 });
    // The first read (denied) comes within moments; the grant before the second, 4 s on.
    await new Promise((r) => setTimeout(r, 1_500));
    await fetch(denials, { method: 'DELETE' });
    const r = await running;
    expect(r.stderr).toMatch(/HTTP 403 PERMISSION_DENIED.*\(attempt 1 of 5; again in 4 s\)/);
    expect(r.code).toBe(0);
    expect(verifies(readFileSync(passwd, 'utf8'), 'alice', password)).toBe(true);
  });
});
