// The Secrets port: how the plane reads a secret it only ever holds a reference to (brief invariant 7).
// Values come back as strings and go straight to the one place that needs them; they are never logged,
// stored or put in an error message. Errors are classified so callers can decide retry vs latch.
import type { SecretRef } from '../domain/proxy.js';

/**
 * - not_found: the secret or version does not exist (or the secret has no versions)
 * - permission_denied: the caller may not access it (IAM) — or, with roles granted per secret, it does not exist
 * - failed_precondition: the version exists but is DISABLED or DESTROYED
 * - invalid_argument: the reference is malformed, or the payload is not UTF-8 text
 * - transient: anything worth retrying (unavailable, deadline, network, checksum mismatch in transit, and
 *   UNAUTHENTICATED: a rejected access token — one expiring or refreshing — not a missing role)
 */
export type SecretErrorKind =
  | 'not_found'
  | 'permission_denied'
  | 'failed_precondition'
  | 'invalid_argument'
  | 'transient';

export class SecretAccessError extends Error {
  constructor(
    readonly kind: SecretErrorKind,
    /** The resource name that was asked for (a reference, never a value). */
    readonly resource: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SecretAccessError';
  }

  /** Worth retrying with backoff; every other kind stays wrong until someone changes the secret or IAM. */
  get retryable(): boolean {
    return this.kind === 'transient';
  }
}

export interface SecretReader {
  /** The version's payload as UTF-8 text. Rejects with SecretAccessError. */
  access(ref: SecretRef): Promise<string>;
}

export interface SecretVersionResolver {
  /**
   * The full name of the version a reference points at now (`latest` → `…/versions/7`), without reading
   * the payload. Rotation changes it, so it is what a spec hash should include (never the value).
   * A version that is not ENABLED (`latest` names the newest whatever its state) rejects with
   * `failed_precondition`, as access() would: nothing may be built on a version no one can read.
   */
  resolve(ref: SecretRef): Promise<string>;
}

/** `projects/{project}/secrets/{secret}/versions/{version}` — the name Secret Manager's access call takes. */
export function secretResourceName(projectId: string, ref: SecretRef): string {
  return `${secretName(projectId, ref.secret)}/versions/${ref.version}`;
}

/** `projects/{project}/secrets/{secret}` — the name notifications carry in their `secretId` attribute. */
export function secretName(projectId: string, secret: string): string {
  return `projects/${projectId}/secrets/${secret}`;
}

const VERSION_NAME = /^projects\/([^/]+)\/secrets\/([A-Za-z0-9_-]{1,255})(?:\/versions\/([^/]+))?$/;

/**
 * Splits a secret or version resource name. On GCP the project segment is the project NUMBER even when
 * the caller used the project ID, so match secrets by `secret`, not by comparing whole names.
 */
export function parseSecretName(
  name: string,
): { project: string; secret: string; version: string | undefined } | undefined {
  const m = VERSION_NAME.exec(name);
  return m ? { project: m[1]!, secret: m[2]!, version: m[3] } : undefined;
}
