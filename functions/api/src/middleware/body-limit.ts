// Bounds every request body (read at most maxBytes, with or without Content-Length; request-body.ts) and
// answers 413 payload_too_large in the API's error shape.
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../errors.js';
import { readBody } from './request-body.js';

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

/**
 * `tooLarge` builds the 413. It should say Connection: close, because the rest of the body is never read:
 * on a kept-alive connection the next request would sit behind it and the server would drop the socket
 * (seen with @hono/node-server after a chunked body was cut short). Closing is what RFC 9110 §15.5.14
 * expects after a 413.
 */
export const bodyLimit = (maxBytes: number, tooLarge: (maxBytes: number) => Error) =>
  createMiddleware(async (c, next) => {
    if (!(await readBody(c, maxBytes))) throw tooLarge(maxBytes);
    await next();
  });

export const limitBody = ({ maxBytes = DEFAULT_MAX_BODY_BYTES }: { maxBytes?: number } = {}) =>
  bodyLimit(
    maxBytes,
    () =>
      new ApiError(413, 'payload_too_large', `request bodies are limited to ${maxBytes} bytes`, {
        headers: { Connection: 'close' },
      }),
  );
