// One structured line per request, in Cloud Logging's httpRequest shape
// (https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry#HttpRequest). Only the path is
// logged: never headers (tokens), bodies, or the query string.
import { createMiddleware } from 'hono/factory';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import type { Principal } from '../auth/authenticator.js';

export interface RequestLogOptions {
  log: Logger;
  /** Monotonic milliseconds; injectable so tests can fix latency. */
  now?: () => number;
  /**
   * Machine traffic whose volume follows the fleet, not anyone's action (the probe's echo, the workers'
   * heartbeats): a success is logged at DEBUG, so it costs nothing at the default LOG_LEVEL; a refusal
   * or a failure is logged as any other.
   */
  routine?: (method: string, path: string) => boolean;
}

const levelOf = (status: number, routine: boolean) =>
  status >= 500 ? 'error' : status >= 400 ? 'warn' : routine ? 'debug' : 'info';

function principalLabel(p: Principal | undefined): string | undefined {
  if (!p) return undefined;
  return p.kind === 'google' ? p.email : p.kind === 'token' ? `token:${p.name}` : 'local';
}

export const requestLog = ({
  log,
  now = () => performance.now(),
  routine = () => false,
}: RequestLogOptions) =>
  createMiddleware<{ Variables: { requestId: string; principal?: Principal } }>(async (c, next) => {
    const start = now();
    await next();
    const status = c.res.status;
    log[levelOf(status, routine(c.req.method, c.req.path))](`${c.req.method} ${c.req.path} ${status}`, {
      httpRequest: {
        requestMethod: c.req.method,
        requestUrl: c.req.path,
        status,
        latency: `${((now() - start) / 1000).toFixed(3)}s`,
        userAgent: c.req.header('user-agent')?.slice(0, 200),
      },
      requestId: c.get('requestId'),
      principal: principalLabel(c.get('principal')),
    });
  });
