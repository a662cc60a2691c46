// SecretReader on the real @google-cloud/secret-manager client. It checks the payload's CRC32C as Google
// recommends (https://cloud.google.com/secret-manager/docs/access-secret-version), decodes UTF-8 strictly,
// and never puts a value in an error or a log line.
import type { SecretRef } from '../../domain/proxy.js';
import {
  SecretAccessError,
  type SecretReader,
  type SecretVersionResolver,
  secretResourceName,
} from '../../ports/secrets.js';
import { crc32c } from './crc32c.js';
import { toSecretAccessError } from './errors.js';

type Int64 = number | string | { toString(): string };

/** The two calls this adapter makes; SecretManagerServiceClient satisfies it, tests may pass a fake. */
export interface SecretManagerAccessClient {
  accessSecretVersion(request: { name: string }): Promise<
    [
      {
        name?: string | null;
        payload?: { data?: Uint8Array | string | null; dataCrc32c?: Int64 | null } | null;
      },
      ...unknown[],
    ]
  >;
  getSecretVersion(request: { name: string }): Promise<[{ name?: string | null }, ...unknown[]]>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class SecretManagerSecretReader implements SecretReader, SecretVersionResolver {
  constructor(
    private readonly client: SecretManagerAccessClient,
    private readonly projectId: string,
  ) {}

  async access(ref: SecretRef): Promise<string> {
    const name = secretResourceName(this.projectId, ref);
    let response: Awaited<ReturnType<SecretManagerAccessClient['accessSecretVersion']>>[0];
    try {
      [response] = await this.client.accessSecretVersion({ name });
    } catch (err) {
      throw toSecretAccessError(err, name);
    }
    const raw = response.payload?.data ?? new Uint8Array();
    const bytes = typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw;
    const expected = response.payload?.dataCrc32c;
    if (expected !== undefined && expected !== null && Number(String(expected)) !== crc32c(bytes)) {
      throw new SecretAccessError('transient', name, `Secret ${name} failed its CRC32C check in transit`);
    }
    try {
      return utf8.decode(bytes);
    } catch (err) {
      throw new SecretAccessError('invalid_argument', name, `Secret ${name} is not UTF-8 text`, {
        cause: err,
      });
    }
  }

  async resolve(ref: SecretRef): Promise<string> {
    const name = secretResourceName(this.projectId, ref);
    try {
      const [version] = await this.client.getSecretVersion({ name });
      if (!version.name) throw new Error('GetSecretVersion returned no name');
      return version.name;
    } catch (err) {
      throw toSecretAccessError(err, name);
    }
  }
}
