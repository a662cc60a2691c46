// What an emulated VM's startup script does on GCP with its `proxyplane-credentials-secret` metadata:
// read the named Secret Manager version (here from our Secret Manager emulator, through the real client
// and the plane's SecretReader adapter) and parse it with the rules every reader shares
// (parseProxyCredentials: `username:password`, trailing newlines ignored, CRLF refused — as the VM's
// shell does). A missing secret resolves to null, so the VM's proxy stays down (fail closed); a malformed
// name or payload, or any other failure, is thrown and logged by the Compute emulator.
// The one resolver of both the Compute emulator's own client (`startComputeEmulator({secretManagerEndpoint})`)
// and the local plane's (`credentialsFromSecretManager(client)`).
import { createSecretManagerClient } from '../../shared/src/adapters/secret-manager/client.js';
import {
  type SecretManagerAccessClient,
  SecretManagerSecretReader,
} from '../../shared/src/adapters/secret-manager/reader.js';
import { basicUserPass, parseProxyCredentials } from '../../shared/src/domain/cloud-init/credentials.js';
import { SecretAccessError } from '../../shared/src/ports/secrets.js';
import type { ResolveCredentials } from './instance-proxy.js';

const RESOURCE = /^projects\/([^/]+)\/secrets\/([A-Za-z0-9_-]+)(?:\/versions\/(latest|[1-9][0-9]*))?$/;

/** A payload that is not `username:password`; the message names the rule, never the value. */
export class MalformedCredentials extends Error {
  readonly kind = 'malformed_credentials';
  constructor(
    readonly secret: string,
    reason: string,
  ) {
    super(`secret ${secret}: ${reason}`);
    this.name = 'MalformedCredentials';
  }
}

/** Resolves to the canonical "username:password" (what the VM's proxy checks Basic auth against). */
export function credentialsFromSecretManager(client: SecretManagerAccessClient): ResolveCredentials {
  return async (name, rule = 'managed') => {
    const m = RESOURCE.exec(name);
    if (!m)
      throw new SecretAccessError('invalid_argument', name, `not a Secret Manager resource name: ${name}`);
    const [, project, secret, version = 'latest'] = m as unknown as [string, string, string, string?];
    let payload: string;
    try {
      payload = await new SecretManagerSecretReader(client, project).access({ secret, version });
    } catch (err) {
      if (err instanceof SecretAccessError && err.kind === 'not_found') return null;
      throw err;
    }
    const parsed = parseProxyCredentials(payload, rule);
    if (!parsed.ok) throw new MalformedCredentials(name, parsed.reason);
    return basicUserPass(parsed.credentials);
  };
}

export interface SecretCredentialResolver {
  resolve: ResolveCredentials;
  close(): Promise<void>;
}

/** `endpoint` is the Secret Manager emulator's "host:port"; close() closes the client made for it. */
export function secretManagerCredentials(endpoint: string): SecretCredentialResolver {
  const client = createSecretManagerClient(endpoint);
  return { resolve: credentialsFromSecretManager(client), close: () => client.close() };
}
