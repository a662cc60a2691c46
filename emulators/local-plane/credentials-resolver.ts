// What an emulated VM's startup script does on GCP with its `proxyplane-credentials-secret` metadata:
// read the named Secret Manager version (here from our Secret Manager emulator, through the real client
// and the plane's SecretReader adapter). A missing secret resolves to null, so the VM's proxy stays
// down (fail closed); any other failure is thrown and logged by the Compute emulator.
import {
  type SecretManagerAccessClient,
  SecretManagerSecretReader,
} from '../../shared/src/adapters/secret-manager/reader.js';
import { SecretAccessError } from '../../shared/src/ports/secrets.js';

const RESOURCE = /^projects\/([^/]+)\/secrets\/([A-Za-z0-9_-]+)(?:\/versions\/(latest|[1-9][0-9]*))?$/;

export type ResolveCredentials = (secretResourceName: string) => Promise<string | null>;

export function secretManagerCredentials(client: SecretManagerAccessClient): ResolveCredentials {
  return async (name) => {
    const m = RESOURCE.exec(name);
    if (!m)
      throw new SecretAccessError('invalid_argument', name, `not a Secret Manager resource name: ${name}`);
    const [, project, secret, version = 'latest'] = m as unknown as [string, string, string, string?];
    try {
      return await new SecretManagerSecretReader(client, project).access({ secret, version });
    } catch (err) {
      if (err instanceof SecretAccessError && err.kind === 'not_found') return null;
      throw err;
    }
  };
}
