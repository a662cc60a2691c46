// Upstream credentials from Secret Manager (the CredentialResolver the worker calls while it builds a
// snapshot, before the swap — never on the hot path). The plane's SecretReader adapter over the real
// client, behind a CachedSecretReader that only shares concurrent reads of one reference (it keeps no
// copy past the read); the worker's CredentialCache above it is the one cache: the TTL of "latest", the
// last good value across a failed refresh, nothing kept for a reference the snapshot no longer names. The
// payload is the plane's one credentials format, read by the plane's one parser (parseProxyCredentials:
// `username:password`, trailing newlines ignored). A reference names no proxy's mode, so the external rule
// (a provider's long username): a managed proxy on the default cloud-init whose secret only that rule
// allows never boots, and is never in a snapshot (one with its own cloud-init is read by it everywhere).
import { CachedSecretReader } from '../../../../shared/src/adapters/secret-manager/cached-reader.js';
import { createSecretManagerClient } from '../../../../shared/src/adapters/secret-manager/client.js';
import { SecretManagerSecretReader } from '../../../../shared/src/adapters/secret-manager/reader.js';
import { parseProxyCredentials } from '../../../../shared/src/domain/cloud-init/credentials.js';
import type { SecretRef } from '../../../../shared/src/domain/proxy.js';
import { type Clock, systemClock } from '../../../../shared/src/ports/clock.js';
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
    const c = parseProxyCredentials(payload, 'external');
    // Never the payload in the error: only the rule it breaks.
    if (!c.ok) throw new CredentialError(ref, { cause: new Error(c.reason) });
    return c.credentials;
  }
}

/**
 * The resolver the gateway reads credentials through, over any SecretReader (the tests pass a fake one).
 * The worker's CredentialCache is the one freshness layer: the CachedSecretReader here keeps no copy past
 * its read (ttlMs 0, no stale-if-error: nothing may answer from one, so nothing is stored — nor answers
 * when the wall clock steps back); it only shares concurrent reads of one reference —
 * a snapshot taken while the previous one's read, past CREDENTIAL_RESOLVE_TIMEOUT_MS, still runs joins it.
 * With a TTL and a stale copy of its own (both the gateway TTL), a reference CredentialCache had forgotten
 * (no longer named) and then saw named again was answered from that copy, up to a TTL old, and stamped as
 * read then: a rotated `latest` went on with the old password for up to twice
 * GATEWAY_CREDENTIALS_TTL_SECONDS, and a pinned version disabled meanwhile was served instead of refused.
 */
export function secretCredentials(
  reader: SecretReader,
  clock: Clock = systemClock,
): SecretCredentialResolver {
  return new SecretCredentialResolver(new CachedSecretReader(reader, { ttlMs: 0, clock }));
}

export function secretManagerCredentials(o: {
  projectId: string;
  emulatorHost: string | undefined;
}): SecretCredentialResolver {
  const client = createSecretManagerClient(o.emulatorHost);
  return secretCredentials(new SecretManagerSecretReader(client, o.projectId));
}
