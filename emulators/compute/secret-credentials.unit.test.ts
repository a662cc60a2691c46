import { describe, expect, it } from 'vitest';
import type { SecretManagerAccessClient } from '../../shared/src/adapters/secret-manager/reader.js';
import { credentialsFromSecretManager, MalformedCredentials } from './secret-credentials.js';

function fakeClient(secrets: Record<string, string>): SecretManagerAccessClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async accessSecretVersion({ name }) {
      asked.push(name);
      const value = secrets[name];
      if (value === undefined) throw Object.assign(new Error('not found'), { code: 5 });
      return [{ name, payload: { data: Buffer.from(value) } }];
    },
    async getSecretVersion({ name }) {
      return [{ name }];
    },
  };
}

/** A residential provider's username: past the 64 [A-Za-z0-9._~-] the default startup script takes. */
const PROVIDER_USER = 'customer-c1-zone-residential_proxy1-country-us-city-newyork-session-12345678';

describe('credentialsFromSecretManager', () => {
  const client = fakeClient({
    'projects/p/secrets/proxy-a/versions/latest': 'user:pass',
    'projects/p/secrets/proxy-a/versions/3': 'old:pass',
    'projects/p/secrets/echoed/versions/latest': 'user:pass\n',
    'projects/p/secrets/colons/versions/latest': 'user:pa:ss\n\n',
    'projects/p/secrets/crlf/versions/latest': 'user:Zq7secret\r\n',
    'projects/p/secrets/token/versions/latest': 'just-a-token',
    'projects/p/secrets/provider/versions/latest': `${PROVIDER_USER}:pw`,
  });
  const resolve = credentialsFromSecretManager(client);

  it.each([
    ['projects/p/secrets/proxy-a', 'user:pass'],
    ['projects/p/secrets/proxy-a/versions/latest', 'user:pass'],
    ['projects/p/secrets/proxy-a/versions/3', 'old:pass'],
    // `echo … | gcloud secrets create --data-file=-` leaves a newline: the VM's proxy must not expect it.
    ['projects/p/secrets/echoed', 'user:pass'],
    ['projects/p/secrets/colons', 'user:pa:ss'],
  ])('reads %s', async (name, value) => {
    await expect(resolve(name)).resolves.toBe(value);
  });

  it.each([
    ['projects/p/secrets/crlf', 'Zq7secret'],
    ['projects/p/secrets/token', 'just-a-token'],
  ])('refuses the malformed payload of %s without quoting it (the proxy stays down)', async (name, value) => {
    const err = await resolve(name).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MalformedCredentials);
    expect((err as Error).message).not.toContain(value);
  });

  it('answers null for a secret that does not exist, so the proxy stays down', async () => {
    await expect(resolve('projects/p/secrets/nope')).resolves.toBeNull();
  });

  it.each(['secrets/x', 'projects/p/secrets/x/versions/0', 'projects/p/secrets/a b'])(
    'refuses the malformed name %s without asking',
    async (name) => {
      const before = client.asked.length;
      await expect(resolve(name)).rejects.toMatchObject({ kind: 'invalid_argument' });
      expect(client.asked).toHaveLength(before);
    },
  );

  it('throws what is not "not found" (the emulator logs it; the proxy stays down)', async () => {
    const failing = credentialsFromSecretManager({
      accessSecretVersion: async () => {
        throw Object.assign(new Error('denied'), { code: 7 });
      },
      getSecretVersion: async () => [{}],
    });
    await expect(failing('projects/p/secrets/a')).rejects.toMatchObject({ kind: 'permission_denied' });
  });

  it("reads by the VM's rule: a provider's username for a script of the proxy's own, not for the default", async () => {
    const name = 'projects/p/secrets/provider';
    await expect(resolve(name, 'external')).resolves.toBe(`${PROVIDER_USER}:pw`);
    await expect(resolve(name, 'managed')).rejects.toBeInstanceOf(MalformedCredentials);
    await expect(resolve(name)).rejects.toBeInstanceOf(MalformedCredentials);
  });
});
