// The HTTP error contract: every failure is `{"error":"<stable_code>","message":"…"}` (plus `issues` for
// validation failures). Codes are part of the API; messages are for people and may change.
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export type ErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'immutable_field'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'not_found'
  | 'already_exists'
  | 'conflict'
  | 'deletion_requested'
  | 'unknown_job'
  | 'job_paused'
  | 'unauthenticated'
  | 'forbidden'
  | 'method_not_allowed'
  | 'unavailable'
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
  requestId?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly extra: { issues?: Issue[]; retryAfterSeconds?: number; headers?: Record<string, string> } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ApiError';
  }

  body(): ErrorBody {
    return this.extra.issues
      ? { error: this.code, message: this.message, issues: this.extra.issues }
      : { error: this.code, message: this.message };
  }
}

export const notFound = (name: string) => new ApiError(404, 'not_found', `proxy "${name}" not found`);

export const invalidRequest = (message: string, issues: Issue[]) =>
  new ApiError(400, 'invalid_request', message, { issues });
