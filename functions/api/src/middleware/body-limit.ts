// Bounds every request body (hono/body-limit reads at most maxSize bytes, with or without Content-Length)
// and answers 413 payload_too_large in the API's error shape.
import { bodyLimit } from 'hono/body-limit';
import { ApiError } from '../errors.js';

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export const limitBody = ({ maxBytes = DEFAULT_MAX_BODY_BYTES }: { maxBytes?: number } = {}) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ApiError(413, 'payload_too_large', `request bodies are limited to ${maxBytes} bytes`);
    },
  });
