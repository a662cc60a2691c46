// Credentials for the lease response's proxy URL — the one place a credential value may appear (brief,
// invariant 7). Read through the Secrets port (a CachedSecretReader in front of Secret Manager, so a
// lease does not cost a Secret Manager call and a rotation still lands within the cache TTL).
import {
  credentialsRuleOf,
  type ProxyCredentials,
  parseProxyCredentials,
} from '../../../../shared/src/domain/cloud-init/credentials.js';
import type { ProxyResource, SecretRef } from '../../../../shared/src/domain/proxy.js';
import { clientCredentialsRef } from '../../../../shared/src/domain/served-credentials.js';
import { SecretAccessError, type SecretReader } from '../../../../shared/src/ports/secrets.js';

export class CredentialsUnavailable extends Error {
  readonly kind = 'credentials_unavailable';
  /**
   * The secret, when the secret itself is the problem (missing, denied, disabled, not username:password
   * by either rule): every proxy naming it fails the same way, so all of them are set aside together. A
   * payload only the managed rule refuses (a provider's long username) is this proxy's problem alone: an
   * external proxy naming the same secret reads it fine. Absent for a transient Secret Manager failure, and when the proxy left the catalog.
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
 * The proxy's credentials — of the version its instance serves (served-credentials.ts) — as every reader parses the secret (parseProxyCredentials: a trailing newline
 * from `echo … | gcloud secrets create --data-file=-` is not part of the password), or null when it has no
 * credentialsRef. A malformed payload is unavailable, like an unreadable one: a managed proxy's VM refuses
 * it too (credentialsRuleOf), so a URL built from it would not work. Never logs the value (the cause names the rule only).
 */
export async function credentialsFor(
  secrets: SecretReader,
  proxy: ProxyResource,
): Promise<ProxyCredentials | null> {
  const ref = clientCredentialsRef(proxy);
  if (!ref) return null;
  let payload: string;
  try {
    payload = await secrets.access(ref);
  } catch (err) {
    // Missing, denied or disabled is the secret's own state: every proxy naming it fails alike. A transient
    // failure says nothing about the secret (the next read may well work): it sets aside this proxy alone.
    const secretsFault = err instanceof SecretAccessError && !err.retryable;
    throw new CredentialsUnavailable(proxy.name, { cause: err, ...(secretsFault ? { secret: ref } : {}) });
  }
  const rule = credentialsRuleOf(proxy.spec);
  const parsed = parseProxyCredentials(payload, rule);
  // An Error, not the bare reason: the logger keeps an Error's message, and read a string as nothing.
  if (!parsed.ok) {
    const everyone = rule === 'external' || !parseProxyCredentials(payload, 'external').ok;
    throw new CredentialsUnavailable(proxy.name, {
      cause: new Error(parsed.reason),
      ...(everyone ? { secret: ref } : {}),
    });
  }
  return parsed.credentials;
}
