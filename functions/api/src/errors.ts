// The HTTP error contract: every failure is `{"error":"<stable_code>","message":"…"}` (plus `issues` for
// validation failures). Codes are part of the API; messages are for people and may change.
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { InvalidStoredProxy } from '../../../shared/src/ports/proxy-store.js';

export type ErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'immutable_field'
  | 'port_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'not_found'
  | 'already_exists'
  | 'conflict'
  | 'deletion_requested'
  | 'precondition_failed'
  | 'unknown_job'
  | 'job_paused'
  | 'unauthenticated'
  | 'forbidden'
  | 'method_not_allowed'
  | 'rate_limited'
  | 'unavailable'
  | 'outcome_unknown'
  | 'stored_proxy_invalid'
  | 'internal';

/** One problem with the request: `path` is dot-separated from the root of the body (or the query/param). */
export interface Issue {
  path: string;
  code: string;
  message: string;
}

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  issues?: Issue[];
  /** For port_not_allowed: the ports a managed proxy may use. */
  allowedPorts?: number[];
  /** For precondition_failed: the proxy's current generation. */
  generation?: number;
  /** For precondition_failed on a proxy: its current ETag. */
  etag?: string;
  requestId?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly extra: {
      issues?: Issue[];
      allowedPorts?: readonly number[];
      generation?: number;
      etag?: string;
      retryAfterSeconds?: number;
      headers?: Record<string, string>;
    } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ApiError';
  }

  body(): ErrorBody {
    const { issues, allowedPorts, generation, etag } = this.extra;
    return {
      error: this.code,
      message: this.message,
      ...(issues ? { issues } : {}),
      ...(allowedPorts ? { allowedPorts: [...allowedPorts] } : {}),
      ...(generation !== undefined ? { generation } : {}),
      ...(etag !== undefined ? { etag } : {}),
    };
  }
}

export const notFound = (name: string) => new ApiError(404, 'not_found', `proxy "${name}" not found`);

export const invalidRequest = (message: string, issues: Issue[]) =>
  new ApiError(400, 'invalid_request', message, { issues });

/**
 * A managed proxy on a port its firewall does not open (shared/src/domain/managed-ports.ts). `path` is
 * where the port is in the body: `spec.port` for POST, `port` for PUT/PATCH of the spec itself.
 */
export function portNotAllowed(port: number, allowed: readonly number[], path: string): ApiError {
  const open = allowed.length > 0 ? allowed.map((p) => `tcp:${p}`).join(', ') : 'no port';
  const message = `${path} ${port} is not open to managed proxies: their firewall opens ${open} (MANAGED_PROXY_PORTS); use one of those, or open the port in the deployment first`;
  return new ApiError(400, 'port_not_allowed', message, {
    issues: [{ path, code: 'port_not_allowed', message }],
    allowedPorts: allowed,
  });
}

/**
 * A stored document that no longer fits the model (hand-edited, half-written by an older version): the
 * server's data, not the caller's input, hence 500 — with its own code and the fields that failed (never
 * their values), so that an operator can tell it from a bug and knows what to do.
 */
export function storedProxyInvalid(err: InvalidStoredProxy): ApiError {
  const { name, issues, deletionRequestedAt } = err.stored;
  const fields = issues.map((i) => i.path || '(document)').join(', ');
  const next = deletionRequestedAt
    ? 'its deletion is requested: reconcile removes the document, the orphan GC its instance — unless the GC’s brake refuses its sweeps, and then an operator by hand (docs/api.md § Delete)'
    : `repair it in the Firestore console, or DELETE /v1/proxies/${name} to remove it`;
  return new ApiError(
    500,
    'stored_proxy_invalid',
    `the stored document of proxy "${name}" does not fit the model (${fields}): ${next}`,
    { issues },
    { cause: err },
  );
}
