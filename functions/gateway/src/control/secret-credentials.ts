// Upstream credentials from Secret Manager (the CredentialResolver the worker calls while it builds a
// snapshot, before the swap — never on the hot path). The plane's SecretReader adapter over the real
// client, behind a CachedSecretReader so that concurrent misses share one call and a transient failure may
// serve the last value a little longer; the worker's CredentialCache above it keeps the last good value
// of "latest" across a failed refresh. The payload is the plane's one credentials format, read by the
// plane's one parser (parseProxyCredentials: `username:password`, trailing newlines ignored): the proxy
// VMs accept exactly that, so the gateway must not authenticate with anything else.
import { CachedSecretReader } from '../../../../shared/src/adapters/secret-manager/cached-reader.js';
import { createSecretManagerClient } from '../../../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../../../shared/src/adapters/secret-manager/reader.js';
import { parseProxyCredentials } from '../../../../shared/src/domain/cloud-init/credentials.js';
import type { SecretRef } from '../../../../shared/src/domain/proxy.js';
import { systemClock } from '../../../../shared/src/ports/clock.js';
import type { SecretReader } from '../../../../shared/src/ports/secrets.js';
import { CredentialError, type CredentialResolver, type UpstreamCredentials } from '../credentials.js';

export class SecretCredentialResolver implements CredentialResolver {
  constructor(private readonly reader: SecretReader) {}

  async resolve(ref: SecretRef): Promise<UpstreamCredentials> {
    let payload: string;
    try {
      payload = await this.reader.access({ secret: ref.secret, version: ref.version ?? 'latest' });
    } catch (cause) {
      throw new CredentialError(ref, { cause });
    }
    const c = parseProxyCredentials(payload);
    // Never the payload in the error: only the rule it breaks.
    if (!c.ok) throw new CredentialError(ref, { cause: new Error(c.reason) });
    return c.credentials;
  }
}

export function secretManagerCredentials(o: {
  projectId: string;
  emulatorHost: string | undefined;
  ttlMs: number;
}): SecretCredentialResolver {
  const client = createSecretManagerClient(o.emulatorHost);
  const cached = new CachedSecretReader(new SecretManagerSecretReader(client, o.projectId), {
    ttlMs: o.ttlMs,
    clock: systemClock,
    maxEntries: 50_000,
    staleIfErrorMs: o.ttlMs,
  });
  return new SecretCredentialResolver(cached);
}
