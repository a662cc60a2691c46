// The credentials lookup a deployed VM's startup script does (read the Secret Manager version named
// in metadata), done with the real @google-cloud/secret-manager client against a Secret Manager
// endpoint — our emulator locally. Reuses the plane's own reader (CRC32C check, strict UTF-8).
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../shared/src/adapters/secret-manager/reader.js';
import { parseSecretName, SecretAccessError } from '../../shared/src/ports/secrets.js';
import type { ResolveCredentials } from './instance-proxy.js';

export interface SecretCredentialResolver {
  resolve: ResolveCredentials;
  close(): Promise<void>;
}

/**
 * `endpoint` is the Secret Manager emulator's "host:port". A missing secret or version yields null
 * (the VM's proxy then stays down); any other failure rejects, which the boot also treats as fatal.
 */
export function secretManagerCredentials(endpoint: string): SecretCredentialResolver {
  const client = createSecretManagerClient(endpoint);
  return {
    async resolve(resourceName) {
      const parsed = parseSecretName(resourceName);
      if (!parsed?.version) return null;
      const reader = new SecretManagerSecretReader(client, parsed.project);
      try {
        return await reader.access({ secret: parsed.secret, version: parsed.version });
      } catch (err) {
        if (err instanceof SecretAccessError && err.kind === 'not_found') return null;
        throw err;
      }
    },
    close: () => client.close(),
  };
}
