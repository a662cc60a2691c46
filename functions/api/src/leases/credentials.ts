// Credentials for the lease response's proxy URL — the one place a credential value may appear (brief,
// invariant 7). Read through the Secrets port (a CachedSecretReader in front of Secret Manager, so a
// lease does not cost a Secret Manager call and a rotation still lands within the cache TTL).
import type { ProxyResource } from '../../../../shared/src/domain/proxy.js';
import type { SecretReader } from '../../../../shared/src/ports/secrets.js';

export class CredentialsUnavailable extends Error {
  readonly kind = 'credentials_unavailable';
  constructor(
    readonly proxy: string,
    options?: { cause?: unknown },
  ) {
    super(`credentials of proxy ${proxy} could not be read`, options);
    this.name = 'CredentialsUnavailable';
  }
}

/** "user:pass" for the proxy, or null when it has no credentialsRef. Never logs the value. */
export async function credentialsFor(secrets: SecretReader, proxy: ProxyResource): Promise<string | null> {
  const ref = proxy.spec.credentialsRef;
  if (!ref) return null;
  try {
    return await secrets.access(ref);
  } catch (err) {
    throw new CredentialsUnavailable(proxy.name, { cause: err });
  }
}
