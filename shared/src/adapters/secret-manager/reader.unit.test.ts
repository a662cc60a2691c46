import { describe, expect, it } from 'vitest';
import { SecretAccessError } from '../../ports/secrets.js';
import { crc32c } from './crc32c.js';
import { type SecretManagerAccessClient, SecretManagerSecretReader } from './reader.js';

type AccessResponse = Awaited<ReturnType<SecretManagerAccessClient['accessSecretVersion']>>[0];

function fakeClient(
  answer: (name: string) => AccessResponse | Error,
  state: string | number | null = 'ENABLED',
): SecretManagerAccessClient & { names: string[] } {
  const names: string[] = [];
  return {
    names,
    async accessSecretVersion({ name }) {
      names.push(name);
      const a = answer(name);
      if (a instanceof Error) throw a;
      return [a];
    },
    async getSecretVersion({ name }) {
      names.push(name);
      return [{ name: name.replace('/latest', '/7'), state }];
    },
  };
}

const payload = (text: string, crc?: number | string) => {
  const data = Buffer.from(text, 'utf8');
  return { name: 'n', payload: { data, dataCrc32c: crc ?? String(crc32c(data)) } };
};

describe('SecretManagerSecretReader', () => {
  it('asks for projects/{p}/secrets/{s}/versions/{v} and returns the UTF-8 text', async () => {
    const client = fakeClient(() => payload('alice:pä55'));
    const reader = new SecretManagerSecretReader(client, 'demo');
    await expect(reader.access({ secret: 'proxy-creds', version: 'latest' })).resolves.toBe('alice:pä55');
    expect(client.names).toEqual(['projects/demo/secrets/proxy-creds/versions/latest']);
  });

  it('accepts a base64 string payload and a missing checksum', async () => {
    const reader = new SecretManagerSecretReader(
      fakeClient(() => ({ payload: { data: Buffer.from('v').toString('base64') } })),
      'demo',
    );
    await expect(reader.access({ secret: 's', version: '1' })).resolves.toBe('v');
  });

  it('rejects a checksum mismatch as transient, without the value in the message', async () => {
    const reader = new SecretManagerSecretReader(
      fakeClient(() => payload('topsecret', 12345)),
      'demo',
    );
    const err = await reader.access({ secret: 's', version: '1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretAccessError);
    expect(err).toMatchObject({ kind: 'transient' });
    expect(String((err as Error).message)).not.toContain('topsecret');
  });

  it('rejects bytes that are not UTF-8 as invalid_argument', async () => {
    const data = Buffer.from([0xff, 0xfe, 0x00]);
    const reader = new SecretManagerSecretReader(
      fakeClient(() => ({ payload: { data, dataCrc32c: crc32c(data) } })),
      'demo',
    );
    await expect(reader.access({ secret: 's', version: '1' })).rejects.toMatchObject({
      kind: 'invalid_argument',
    });
  });

  it('classifies client errors and keeps them as the cause', async () => {
    const cause = Object.assign(new Error('{"error":{"code":403,"status":"PERMISSION_DENIED"}}'), {
      code: 403,
    });
    const reader = new SecretManagerSecretReader(
      fakeClient(() => cause),
      'demo',
    );
    await expect(reader.access({ secret: 's', version: 'latest' })).rejects.toMatchObject({
      kind: 'permission_denied',
      resource: 'projects/demo/secrets/s/versions/latest',
      cause,
    });
  });

  it('resolves latest to the concrete version name', async () => {
    const reader = new SecretManagerSecretReader(
      fakeClient(() => payload('x')),
      'demo',
    );
    await expect(reader.resolve({ secret: 's', version: 'latest' })).resolves.toBe(
      'projects/demo/secrets/s/versions/7',
    );
    await expect(
      new SecretManagerSecretReader(
        fakeClient(() => payload('x'), 1),
        'demo',
      ).resolve({
        secret: 's',
        version: 'latest',
      }),
    ).resolves.toBe('projects/demo/secrets/s/versions/7');
  });

  // `latest` is the newest version whatever its state: the VM given it could not read it.
  it.each([['DISABLED'], ['DESTROYED'], [2], [null]])(
    'refuses to resolve to a version in state %s: failed_precondition',
    async (state) => {
      const reader = new SecretManagerSecretReader(
        fakeClient(() => payload('x'), state),
        'demo',
      );
      await expect(reader.resolve({ secret: 's', version: 'latest' })).rejects.toMatchObject({
        name: 'SecretAccessError',
        kind: 'failed_precondition',
        resource: 'projects/demo/secrets/s/versions/latest',
        message: expect.stringContaining('projects/demo/secrets/s/versions/7'),
      });
    },
  );
});
