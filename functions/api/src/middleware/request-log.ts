// One structured line per request, in Cloud Logging's httpRequest shape
// (https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry#HttpRequest). Only the path is
// logged: never headers (tokens), bodies, or the query string — and a lease id in it only as a digest.
import { createMiddleware } from 'hono/factory';
import type { Logger } from '../../../../shared/src/adapters/log/json-logger.js';
import { loggedLeaseId } from '../../../../shared/src/adapters/log/logged-lease-id.js';
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

// The segment after any `leases` segment, however the path is spelt: a client joining a base URL that
// ends in `/` asks for `//v1/leases/<id>` (a 404, logged at WARN), and case or an encoded slash
// (`leases%2F<id>`) must not let the id through either. Over-matching only digests a harmless segment.
const LEASE_PATH = /((?:^|\/)leases(?:\/|%2f)+)([^/]+)/gi;

/**
 * The path as logged: a lease id is the lease (renew, report and release take it with any crawler token:
 * docs/leases.md § Known limits), so it is logged as `lease-<12 hex of its SHA-256>` — the same lease's
 * requests still read alike, and whoever reads the logs gets nothing to act on.
 */
export function loggedPath(path: string): string {
  return path.replace(LEASE_PATH, (_, prefix: string, id: string) => `${prefix}${loggedLeaseId(id)}`);
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
    const path = loggedPath(c.req.path);
    log[levelOf(status, routine(c.req.method, c.req.path))](`${c.req.method} ${path} ${status}`, {
      httpRequest: {
        requestMethod: c.req.method,
        requestUrl: path,
        status,
        latency: `${((now() - start) / 1000).toFixed(3)}s`,
        userAgent: c.req.header('user-agent')?.slice(0, 200),
      },
      requestId: c.get('requestId'),
      principal: principalLabel(c.get('principal')),
    });
  });
