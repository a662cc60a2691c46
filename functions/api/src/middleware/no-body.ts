// For routes that take no body (GET, DELETE, POST …/reconcile): content is refused rather than ignored, so
// that a client that meant to send something (or a hostile one) learns it was not read, and nothing is
// written on the strength of a request we did not understand. Reads what the body limit cached
// (request-body.ts).
import { createMiddleware } from 'hono/factory';
import { invalidRequest } from '../errors.js';

export const noBody = () =>
  createMiddleware(async (c, next) => {
    if ((await c.req.arrayBuffer()).byteLength > 0) {
      throw invalidRequest('this endpoint takes no request body', [
        { path: '', code: 'unexpected_body', message: 'send the request without a body' },
      ]);
    }
    await next();
  });
