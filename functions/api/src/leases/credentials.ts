// Credentials for the lease response's proxy URL — the one place a credential value may appear (brief,
// invariant 7). Values come from Secret Manager through the SecretReader port and are held in memory only,
// for a short time, so that a lease does not cost a Secret Manager call and a rotation still lands fast.
import type { SecretRef } from '../../../../shared/src/domain/proxy.js';
import type { Clock } from '../../../../shared/src/ports/clock.js';

/**
 * TODO(secrets): import from shared/src/ports/secrets.ts once it lands on main; this is its agreed shape
 * (`access(ref)` → the secret's value, here "user:pass").
 */
export interface SecretReader {
  access(ref: SecretRef): Promise<string>;
}

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

export class CredentialCache {
  private readonly values = new Map<string, { value: Promise<string>; until: number }>();

  constructor(
    private readonly reader: SecretReader,
    private readonly clock: Clock,
    private readonly ttlMs = 60_000,
  ) {}

  /** "user:pass" for the proxy, or null when it has no credentialsRef. */
  async credentialsFor(proxy: string, ref: SecretRef | undefined): Promise<string | null> {
    if (!ref) return null;
    const key = `${ref.secret}@${ref.version}`;
    const now = this.clock.now().getTime();
    let entry = this.values.get(key);
    if (!entry || entry.until <= now) {
      // Concurrent leases share one in-flight read; a failed read is not kept.
      const value = this.reader.access(ref);
      entry = { value, until: now + this.ttlMs };
      this.values.set(key, entry);
      value.catch(() => {
        if (this.values.get(key)?.value === value) this.values.delete(key);
      });
    }
    try {
      return await entry.value;
    } catch (err) {
      throw new CredentialsUnavailable(proxy, { cause: err });
    }
  }
}
