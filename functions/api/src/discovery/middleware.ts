// The outer middleware of the service (seed §7: recover → request-log → MaxBytesReader(64KiB) → auth),
// as Hono pieces: `recover` is the onError handler, so it wraps everything; the rest are middleware.
import type { ErrorHandler, MiddlewareHandler, NotFoundHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { AuthEnv } from './auth.js';
import type { StructuredLog } from './log.js';

export const MAX_BODY_BYTES = 64 * 1024;

/** HTTP exceptions raised inside Hono and its validators, by status → our stable codes. */
const CODES: Record<number, string> = {
  400: 'invalid_json',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'body_too_large',
  415: 'unsupported_media_type',
};

export function recover(log: StructuredLog): ErrorHandler {
  return (err, c) => {
    if (err instanceof HTTPException && err.status < 500) {
      return c.json({ error: CODES[err.status] ?? 'bad_request' }, err.status);
    }
    log('ERROR', 'unhandled error', {
      err: err instanceof Error ? (err.stack ?? err.message) : String(err),
      path: c.req.path,
    });
    return c.json({ error: 'internal' }, 500);
  };
}

export const notFound: NotFoundHandler = (c) => c.json({ error: 'not_found' }, 404);

export function limitBody(maxSize = MAX_BODY_BYTES): MiddlewareHandler {
  return bodyLimit({ maxSize, onError: (c) => c.json({ error: 'body_too_large', maxBytes: maxSize }, 413) });
}

/** One line per request in Cloud Logging's httpRequest shape; never headers or bodies (tokens, credentials). */
export function requestLog(
  log: StructuredLog,
  opts: { projectId?: string } = {},
): MiddlewareHandler<AuthEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const status = c.res.status;
    const trace = c.req.header('x-cloud-trace-context')?.split('/')[0];
    log(status >= 500 ? 'ERROR' : 'INFO', `${c.req.method} ${c.req.path} ${status}`, {
      httpRequest: {
        requestMethod: c.req.method,
        requestUrl: c.req.path,
        status,
        latency: `${((performance.now() - started) / 1000).toFixed(4)}s`,
        userAgent: c.req.header('user-agent'),
      },
      principal: c.get('principal'),
      ...(trace && opts.projectId
        ? { 'logging.googleapis.com/trace': `projects/${opts.projectId}/traces/${trace}` }
        : {}),
    });
  };
}
