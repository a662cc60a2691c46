// Classifies what the Secret Manager client throws, by code only:
//  - gRPC (the client's default transport on GCP): a GoogleError whose numeric `code` is the canonical code.
//  - REST fallback (what local emulators use): a GaxiosError whose `code` is the HTTP status and whose
//    message is the JSON google.rpc.Status body; its `status` field is read as a structured code, because
//    HTTP 400 alone cannot tell INVALID_ARGUMENT from FAILED_PRECONDITION
//    (../shared/design/gcp-offline-recipes.md §3 "How errors surface").
//  - network failures: a string `code` such as ECONNRESET → transient.
import { SecretAccessError, type SecretErrorKind } from '../../ports/secrets.js';
import { canonicalCode } from '../google-error-code.js';

const BY_STATUS: Record<string, SecretErrorKind> = {
  INVALID_ARGUMENT: 'invalid_argument',
  OUT_OF_RANGE: 'invalid_argument',
  // A wrong endpoint or API surface: retrying will not help.
  UNIMPLEMENTED: 'invalid_argument',
  NOT_FOUND: 'not_found',
  PERMISSION_DENIED: 'permission_denied',
  // UNAUTHENTICATED (gRPC 16, HTTP 401) is left out on purpose, so it reads as transient: it rejects the
  // caller's access token, not its access to the secret. On GCP that token is the runtime's service
  // account, minted and refreshed by the metadata server, so a 401 is a token expiring or refreshing
  // mid-call — gone on the next try. The Compute adapter treats a 401 the same way (gce/errors.ts
  // classify). Read as permission_denied it put a proxy in CloudInitError and set aside every proxy
  // naming the secret at the lease service, for a blip that says nothing about the secret. A missing
  // role is PERMISSION_DENIED, which stays permanent.
  FAILED_PRECONDITION: 'failed_precondition',
};

export function classifySecretManagerError(err: unknown): SecretErrorKind {
  return BY_STATUS[canonicalCode(err)] ?? 'transient';
}

const DESCRIBE: Record<SecretErrorKind, string> = {
  not_found: 'does not exist (or the secret has no versions)',
  // IAM is checked before existence: with roles granted per secret (terraform/secrets.tf), a secret that
  // does not exist — a typo in a spec, a deleted secret — answers PERMISSION_DENIED too ("or it may not
  // exist"), so the message must not send the reader to IAM alone.
  permission_denied: 'is not accessible to this service account, or does not exist',
  failed_precondition: 'is disabled or destroyed',
  invalid_argument: 'is not a valid reference',
  transient: 'could not be read right now',
};

/** A SecretAccessError for `resource`, keeping the client's error as `cause`. */
export function toSecretAccessError(err: unknown, resource: string): SecretAccessError {
  const kind = classifySecretManagerError(err);
  return new SecretAccessError(kind, resource, `Secret ${resource} ${DESCRIBE[kind]}`, { cause: err });
}
