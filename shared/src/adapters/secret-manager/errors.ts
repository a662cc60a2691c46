// Classifies what the Secret Manager client throws, by code only:
//  - gRPC (the client's default transport on GCP): a GoogleError whose numeric `code` is the canonical code.
//  - REST fallback (what local emulators use): a GaxiosError whose `code` is the HTTP status and whose
//    message is the JSON google.rpc.Status body; its `status` field is read as a structured code, because
//    HTTP 400 alone cannot tell INVALID_ARGUMENT from FAILED_PRECONDITION
//    (../shared/design/gcp-offline-recipes.md §3 "How errors surface").
//  - network failures: a string `code` such as ECONNRESET → transient.
import { SecretAccessError, type SecretErrorKind } from '../../ports/secrets.js';

const BY_STATUS: Record<string, SecretErrorKind> = {
  INVALID_ARGUMENT: 'invalid_argument',
  OUT_OF_RANGE: 'invalid_argument',
  // A wrong endpoint or API surface: retrying will not help.
  UNIMPLEMENTED: 'invalid_argument',
  NOT_FOUND: 'not_found',
  PERMISSION_DENIED: 'permission_denied',
  UNAUTHENTICATED: 'permission_denied',
  FAILED_PRECONDITION: 'failed_precondition',
};

// google.rpc.Code numbers for the names above.
const GRPC_NAMES: Record<number, string> = {
  3: 'INVALID_ARGUMENT',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  9: 'FAILED_PRECONDITION',
  11: 'OUT_OF_RANGE',
  12: 'UNIMPLEMENTED',
  16: 'UNAUTHENTICATED',
};

const BY_HTTP: Record<number, SecretErrorKind> = {
  400: 'invalid_argument',
  401: 'permission_denied',
  403: 'permission_denied',
  404: 'not_found',
  501: 'invalid_argument',
};

/** The `error.status` of a google.rpc.Status JSON body, when `message` is one. */
function restStatus(message: unknown): string | undefined {
  if (typeof message !== 'string' || !message.startsWith('{')) return undefined;
  try {
    const status = (JSON.parse(message) as { error?: { status?: unknown } }).error?.status;
    return typeof status === 'string' ? status : undefined;
  } catch {
    return undefined;
  }
}

export function classifySecretManagerError(err: unknown): SecretErrorKind {
  const e = (err ?? {}) as { code?: unknown; status?: unknown; message?: unknown };
  const status = restStatus(e.message);
  if (status !== undefined) return BY_STATUS[status] ?? 'transient';
  if (typeof e.code === 'number' && e.code < 100) return BY_STATUS[GRPC_NAMES[e.code] ?? ''] ?? 'transient';
  const http = typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : undefined;
  if (http !== undefined) return BY_HTTP[http] ?? 'transient';
  return 'transient';
}

const DESCRIBE: Record<SecretErrorKind, string> = {
  not_found: 'does not exist (or the secret has no versions)',
  permission_denied: 'is not accessible to this service account',
  failed_precondition: 'is disabled or destroyed',
  invalid_argument: 'is not a valid reference',
  transient: 'could not be read right now',
};

/** A SecretAccessError for `resource`, keeping the client's error as `cause`. */
export function toSecretAccessError(err: unknown, resource: string): SecretAccessError {
  const kind = classifySecretManagerError(err);
  return new SecretAccessError(kind, resource, `Secret ${resource} ${DESCRIBE[kind]}`, { cause: err });
}
