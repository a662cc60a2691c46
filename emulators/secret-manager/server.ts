// A local Secret Manager: the REST subset the plane uses (routes.ts), driven by the real
// @google-cloud/secret-manager client through localClientOptions(), publishing Secret Manager's Pub/Sub
// notifications with the real Pub/Sub client. Bad input gets Google's error shapes, never a crash.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { PubSub } from '@google-cloud/pubsub';
import { listenOn } from '../../shared/src/adapters/listen.js';
import { type Clock, systemClock } from '../../shared/src/ports/clock.js';
import { foreignCaller } from '../launcher/local-caller.js';
import { adminError, adminRoute } from './admin.js';
import { ApiError } from './api-error.js';
import { Controls } from './controls.js';
import { BodyTooLarge, parseJson, readBody, sendError, sendJson, tooLarge } from './http.js';
import { type EmulatorLog, jsonLog, NotificationPublisher } from './publisher.js';
import { dispatch } from './routes.js';
import { SecretStore } from './store.js';

export interface SecretManagerEmulatorOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Where notifications go; without it the emulator publishes nothing. */
  pubsub?: PubSub | undefined;
  log?: EmulatorLog;
  clock?: Clock;
  /** Answer 401 UNAUTHENTICATED to /v1 calls without `Authorization: Bearer …` (the real API does). */
  requireAuthorization?: boolean;
  /**
   * Project ID → project number. For these projects the emulator behaves as GCP does: requests may name
   * the project either way, and every name it answers (and every notification's secretId / versionId)
   * carries the NUMBER — so code that compares a returned name with one it built from the project ID
   * fails here as it would deployed. Projects not listed answer with the spelling the caller used.
   */
  projectNumbers?: Record<string, string>;
  /**
   * Roles granted per secret, none on the project, as terraform/secrets.tf grants them: a secret that does
   * not exist (deleted, or never created) answers PERMISSION_DENIED "(or it may not exist)" to every call
   * naming it, as GCP does — not NOT_FOUND. Creating a secret stays allowed.
   */
  perSecretIam?: boolean;
}

/** `/v1/projects/{number}/…` → `/v1/projects/{id}/…` for the projects given a number. */
export function projectIdPath(path: string, idOfNumber: ReadonlyMap<string, string>): string {
  const m = /^\/v1\/projects\/([^/:]+)(.*)$/.exec(path);
  const id = m ? idOfNumber.get(m[1]!) : undefined;
  return m && id !== undefined ? `/v1/projects/${id}${m[2]}` : path;
}

export interface SecretManagerEmulator {
  url: string;
  host: string;
  port: number;
  stop(): Promise<void>;
}

export async function startSecretManagerEmulator(
  opts: SecretManagerEmulatorOptions = {},
): Promise<SecretManagerEmulator> {
  const host = opts.host ?? '127.0.0.1';
  const log = opts.log ?? jsonLog;
  const numbers = opts.projectNumbers ?? {};
  for (const [id, number] of Object.entries(numbers)) {
    if (!/^[1-9][0-9]{0,18}$/.test(number)) throw new Error(`projectNumbers.${id}: not a project number`);
  }
  const idOfNumber = new Map(Object.entries(numbers).map(([id, number]) => [number, id]));
  const store = new SecretStore(opts.clock ?? systemClock, (project) => numbers[project] ?? project);
  const controls = new Controls(opts.perSecretIam ?? false);
  const publisher = new NotificationPublisher(opts.pubsub, log);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const foreign = foreignCaller(req.headers);
    if (foreign) return sendError(res, new ApiError('PERMISSION_DENIED', `Emulator: ${foreign}.`), true);
    // A request target that is no URL (`GET http://[`) is the client's error, as the Compute emulator
    // answers it, not the emulator's 500.
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://emulator');
    } catch {
      return sendError(res, new ApiError('INVALID_ARGUMENT', 'Malformed request target.'), true);
    }
    let path: string;
    try {
      path = projectIdPath(decodeURIComponent(url.pathname), idOfNumber);
    } catch {
      return sendError(res, new ApiError('INVALID_ARGUMENT', 'Malformed percent-encoding in the URL path.'));
    }
    if (method === 'GET' && path === '/') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Ok\n');
      return;
    }
    let body: unknown;
    try {
      body = parseJson(await readBody(req));
    } catch (err) {
      if (err instanceof BodyTooLarge) return sendError(res, tooLarge(), true);
      if (err instanceof ApiError) return sendError(res, err);
      throw err;
    }
    if (path.startsWith('/emulator/')) {
      try {
        const result = adminRoute(method, path, body, store, controls);
        if (!result)
          return sendJson(res, 404, { error: 'not_found', message: `no admin route ${method} ${path}` });
        return sendJson(res, result.status, result.body);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const e = adminError(err);
        return sendJson(res, e.status, e.body);
      }
    }
    if (opts.requireAuthorization && !/^Bearer \S+$/.test(req.headers.authorization ?? '')) {
      return sendError(
        res,
        new ApiError(
          'UNAUTHENTICATED',
          'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        ),
      );
    }
    try {
      // `$alt=json;enum-encoding=int` is what the Node client sends; plain REST callers get enum names.
      const enums = (url.searchParams.get('$alt') ?? '').includes('enum-encoding=int') ? 'int' : 'string';
      const result = dispatch(method, path, { query: url.searchParams, body, enums, store }, controls);
      await publisher.publish(result.notifications ?? []);
      return sendJson(res, 200, result.body);
    } catch (err) {
      if (err instanceof ApiError) return sendError(res, err);
      throw err;
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log('ERROR', 'secret manager emulator request failed', {
        method: req.method,
        path: req.url?.split('?')[0],
        error: err instanceof Error ? err.stack : String(err),
      });
      if (!res.headersSent) sendError(res, new ApiError('INTERNAL', 'Internal error in the emulator.'));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;

  const port = await listenOn(server, opts.port ?? 0, host, (err) =>
    log('ERROR', 'secret manager emulator listener error', { error: err.message }),
  );
  log('INFO', `secret manager emulator listening on ${host}:${port}`, { pubsub: Boolean(opts.pubsub) });

  return {
    url: `http://${host}:${port}`,
    host,
    port,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await publisher.close();
    },
  };
}
