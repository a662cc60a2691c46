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
    ['{"username":"u","password":"p"}', { username: 'u', password: 'p' }],
  ])('reads %s', async (payload, creds) => {
    expect(await resolver(payload).resolve({ secret: 'up', version: 'latest' })).toEqual(creds);
  });

  it('refuses a payload of the wrong shape without putting it in the error', async () => {
    const err = await resolver('just-a-token')
      .resolve({ secret: 'up', version: '3' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(CredentialError);
    expect(`${err.message} ${err.cause?.message}`).not.toContain('just-a-token');
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
