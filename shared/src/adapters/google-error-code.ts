// The canonical google.rpc code name of whatever a Google Cloud client threw, by code only (never by
// message text), whichever transport carried it:
//  - gRPC (the clients' transport on GCP): a GoogleError whose numeric `code` is the canonical code.
//  - REST fallback (what local emulators use): a GaxiosError whose `code` is the HTTP status and whose
//    message is Google's JSON google.rpc.Status body; its `error.status` is read first, because HTTP 400
//    alone cannot tell FAILED_PRECONDITION from INVALID_ARGUMENT (recipes §3 "How errors surface").
//  - network failures: a string `code` such as ECONNREFUSED → UNAVAILABLE.

// google.rpc.Code, by number (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto).
const CODE_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

export const rpcCodeName = (code: number): string => CODE_NAMES[code] ?? `CODE_${code}`;

// https://cloud.google.com/apis/design/errors#handling_errors (HTTP ↔ canonical code), for a REST error
// whose body could not be read.
const BY_HTTP: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
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

/** The canonical code name of a client error ("NOT_FOUND"), "UNKNOWN" when it carries none. */
export function canonicalCode(err: unknown): string {
  const e = (err ?? {}) as { code?: unknown; status?: unknown; message?: unknown };
  const status = restStatus(e.message);
  if (status !== undefined) return status;
  if (typeof e.code === 'number') return e.code < 100 ? rpcCodeName(e.code) : (BY_HTTP[e.code] ?? 'UNKNOWN');
  if (typeof e.status === 'number') return BY_HTTP[e.status] ?? 'UNKNOWN';
  if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) return 'UNAVAILABLE';
  return 'UNKNOWN';
}
