// Credentials for the lease response's proxy URL — the one place a credential value may appear (brief,
// invariant 7). Read through the Secrets port (a CachedSecretReader in front of Secret Manager, so a
// lease does not cost a Secret Manager call and a rotation still lands within the cache TTL).
import {
  type ProxyCredentials,
  parseProxyCredentials,
} from '../../../../shared/src/domain/cloud-init/credentials.js';
import type { ProxyResource, SecretRef } from '../../../../shared/src/domain/proxy.js';
import type { SecretReader } from '../../../../shared/src/ports/secrets.js';

export class CredentialsUnavailable extends Error {
  readonly kind = 'credentials_unavailable';
  /**
   * The secret whose value could not be read or used, when that was the failure: every proxy naming it
   * fails the same way (credentials come from the secret alone), so all of them are set aside together.
   */
  readonly secret: SecretRef | undefined;
  constructor(
    readonly proxy: string,
    options?: { cause?: unknown; secret?: SecretRef },
  ) {
    super(`credentials of proxy ${proxy} could not be read`, options);
    this.name = 'CredentialsUnavailable';
    this.secret = options?.secret;
  }
}

/**
 * The proxy's credentials as every reader parses the secret (parseProxyCredentials: a trailing newline
 * from `echo … | gcloud secrets create --data-file=-` is not part of the password), or null when it has no
 * credentialsRef. A malformed payload is unavailable, like an unreadable one: the VM refuses it too, so a
 * URL built from it would not work. Never logs the value (the cause names the rule only).
 */
export async function credentialsFor(
  secrets: SecretReader,
  proxy: ProxyResource,
): Promise<ProxyCredentials | null> {
  const ref = proxy.spec.credentialsRef;
  if (!ref) return null;
  let payload: string;
  try {
    payload = await secrets.access(ref);
  } catch (err) {
    throw new CredentialsUnavailable(proxy.name, { cause: err, secret: ref });
  }
  const parsed = parseProxyCredentials(payload);
  if (!parsed.ok) throw new CredentialsUnavailable(proxy.name, { cause: parsed.reason, secret: ref });
  return parsed.credentials;
}
