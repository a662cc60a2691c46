import { describe, expect, it } from 'vitest';
import { SecretAccessError } from '../../../../shared/src/ports/secrets.js';
import { CredentialError } from '../credentials.js';
import { SecretCredentialResolver } from './secret-credentials.js';

const resolver = (payload: string | Error) =>
  new SecretCredentialResolver({
    access: async (ref) => {
      if (payload instanceof Error) throw payload;
      return ref.secret === 'up' ? payload : 'nope';
    },
  });

describe('SecretCredentialResolver', () => {
  it.each([
    ['user:password', { username: 'user', password: 'password' }],
    ['user:pa:ss', { username: 'user', password: 'pa:ss' }],
    // `echo … | gcloud secrets create --data-file=-`: the newline is not part of the password.
    ['user:password\n', { username: 'user', password: 'password' }],
    ['user:pa:ss\n\n', { username: 'user', password: 'pa:ss' }],
  ])('reads %j', async (payload, creds) => {
    expect(await resolver(payload).resolve({ secret: 'up', version: 'latest' })).toEqual(creds);
  });

  it.each([
    ['just-a-token', 'just-a-token'],
    // The proxy VMs refuse these too (parseProxyCredentials): one format for every reader.
    ['user:Zq7secret\r\n', 'Zq7secret'],
    ['{"username":"u","password":"Zq7json"}', 'Zq7json'],
    [' user:Zq7lead', 'Zq7lead'],
  ])('refuses %j without putting it in the error', async (payload, secretPart) => {
    const err = await resolver(payload)
      .resolve({ secret: 'up', version: '3' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(CredentialError);
    expect(`${err.message} ${err.cause?.message}`).not.toContain(secretPart);
  });

  it('wraps a Secret Manager failure, keeping its cause', async () => {
    const cause = new SecretAccessError(
      'permission_denied',
      'projects/p/secrets/up/versions/latest',
      'denied',
    );
    const err = await resolver(cause)
      .resolve({ secret: 'up', version: 'latest' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(CredentialError);
    expect(err.cause).toBe(cause);
  });
});
