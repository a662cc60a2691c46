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
  getSecretVersion(request: {
    name: string;
  }): Promise<[{ name?: string | null; state?: string | number | null }, ...unknown[]]>;
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

  /**
   * The version a VM will read. GetSecretVersion on `latest` answers the newest version whatever its
   * state (https://cloud.google.com/secret-manager/docs/reference/rest/v1/projects.secrets.versions/get),
   * so a disabled or destroyed one is refused here as access() would refuse it: otherwise a rotation
   * would replace a working VM with one that cannot read its credentials.
   */
  async resolve(ref: SecretRef): Promise<string> {
    const name = secretResourceName(this.projectId, ref);
    let version: Awaited<ReturnType<SecretManagerAccessClient['getSecretVersion']>>[0];
    try {
      [version] = await this.client.getSecretVersion({ name });
      if (!version.name) throw new Error('GetSecretVersion returned no name');
    } catch (err) {
      throw toSecretAccessError(err, name);
    }
    // The client gives the enum's name; 1 is ENABLED in google.cloud.secretmanager.v1.SecretVersion.State.
    if (version.state !== 'ENABLED' && version.state !== 1) {
      const state = typeof version.state === 'string' ? version.state : `in state ${version.state}`;
      throw new SecretAccessError(
        'failed_precondition',
        name,
        `Secret ${name} resolves to ${version.name}, which is ${state}`,
      );
    }
    return version.name;
  }
}
