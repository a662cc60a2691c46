// The app's onError: every throw becomes a JSON error. Known errors map to their stable code; anything
// else is a bug, logged with its stack and answered 500 internal with the request id so that the log line
// can be found. Hono routes every throw from a handler or middleware here, so this is the outermost net.

import type { Context, ErrorHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { InvalidStoredProxy, StoreError } from '../../../../shared/src/ports/proxy-store.js';
import { ApiError, type ErrorCode, storedProxyInvalid } from '../errors.js';
import { loggedPath } from './request-log.js';

/** Retry-After for a store that is unavailable: Firestore outages are usually seconds long. */
const UNAVAILABLE_RETRY_SECONDS = 5;

// HTTPExceptions come from Hono's own middleware (e.g. the zod-openapi media-type gate); map their status.
const codeForStatus: Record<number, ErrorCode> = {
  400: 'invalid_json',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  503: 'unavailable',
};

function fromKnown(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof InvalidStoredProxy) return storedProxyInvalid(err);
  if (err instanceof StoreError) {
    if (err.kind === 'already_exists')
      return new ApiError(409, 'already_exists', err.message, {}, { cause: err });
    if (err.kind === 'not_found') return new ApiError(404, 'not_found', err.message, {}, { cause: err });
    // Another 'invalid' (no InvalidStoredProxy's details): our bug, not the caller's (500 internal below).
    if (err.kind === 'invalid') return null;
    return new ApiError(503, 'unavailable', 'the store is unavailable; retry', {
      retryAfterSeconds: UNAVAILABLE_RETRY_SECONDS,
    });
  }
  if (err instanceof HTTPException) {
    const code = codeForStatus[err.status];
    if (code) return new ApiError(err.status, code, err.message || code, {}, { cause: err });
  }
  return null;
}

export const recover =
  ({ log }: { log: Logger }): ErrorHandler =>
  (err: unknown, c: Context) => {
    const requestId = c.get('requestId') as string | undefined;
    const known = fromKnown(err);
    if (known) {
      if (known.status >= 500) {
        log.error(`${c.req.method} ${loggedPath(c.req.path)}: ${known.code}`, {
          requestId,
          cause: describe(err),
        });
      }
      const headers: Record<string, string> = { ...known.extra.headers };
      if (known.extra.retryAfterSeconds) headers['Retry-After'] = String(known.extra.retryAfterSeconds);
      return c.json(known.body(), known.status, headers);
    }
    log.error(`unhandled error in ${c.req.method} ${loggedPath(c.req.path)}`, {
      requestId,
      error: describe(err),
    });
    return c.json({ error: 'internal', message: 'internal error', requestId }, 500);
  };

function describe(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { value: String(err).slice(0, 500) };
  const kind = (err as { kind?: unknown }).kind;
  return { name: err.name, kind, message: err.message.slice(0, 500), stack: err.stack?.slice(0, 4000) };
}
