// The Compute Engine emulator: the REST subset @google-cloud/compute sends (see README.md) on one
// HTTP server, /admin/… beside it, and real instances whose forward proxies listen on their own
// loopback addresses. Point a real client at it with
// `localClientOptions(emulator.endpoint)` (shared/src/adapters/local-endpoints.ts).
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { listenOn } from '../../shared/src/adapters/listen.js';
import { foreignCaller } from '../launcher/local-caller.js';
import { ComputeAdmin } from './admin.js';
import { handleAdminRequest } from './admin-router.js';
import { handleApiRequest } from './api-handler.js';
import { jsonLineLog } from './log.js';
import { secretManagerCredentials } from './secret-credentials.js';
import { type ComputeEmulatorOptions, createState } from './state.js';

export type { ComputeEmulatorOptions } from './state.js';

export interface ComputeEmulator {
  /** http://host:port */
  url: string;
  host: string;
  port: number;
  /** "host:port", the form COMPUTE_EMULATOR_HOST and localClientOptions take */
  endpoint: string;
  /** the same operations as the /admin/… routes, in process */
  admin: ComputeAdmin;
  stop(): Promise<void>;
}

export async function startComputeEmulator(opts: ComputeEmulatorOptions = {}): Promise<ComputeEmulator> {
  const secrets =
    opts.resolveCredentials || !opts.secretManagerEndpoint
      ? null
      : secretManagerCredentials(opts.secretManagerEndpoint);
  let logFile: ReturnType<typeof createWriteStream> | null = null;
  if (!opts.log && opts.logDir) {
    mkdirSync(opts.logDir, { recursive: true });
    const file = createWriteStream(join(opts.logDir, 'compute-emulator.log'), { flags: 'a' });
    // A disk full or a file gone costs the log's lines, never the emulator (unhandled, it would end it).
    file.on('error', (err) => {
      if (logFile === file)
        process.stderr.write(`compute emulator log file failed, lines dropped: ${err.message}\n`);
      logFile = null;
    });
    logFile = file;
  }
  const state = createState({
    ...opts,
    resolveCredentials: opts.resolveCredentials ?? secrets?.resolve,
    log: opts.log ?? (logFile ? jsonLineLog('compute-emulator', (line) => logFile?.write(line)) : undefined),
  });
  const admin = new ComputeAdmin(state);
  const host = opts.host ?? '127.0.0.1';

  const server: Server = createServer((req, res) => {
    const foreign = foreignCaller(req.headers);
    if (foreign) {
      res.writeHead(403, { 'content-type': 'application/json', connection: 'close' });
      res.end(
        JSON.stringify({
          error: { code: 403, status: 'PERMISSION_DENIED', message: `Emulator: ${foreign}.` },
        }),
      );
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://emulator');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const work = url.pathname.startsWith('/admin/')
      ? handleAdminRequest(admin, req, res, url)
      : handleApiRequest(state, req, res, url);
    work.catch((err: unknown) => {
      state.log('ERROR', 'unhandled emulator error', { error: String(err) });
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  // Clients pool connections; a short server-side idle timeout races their reuse (ECONNRESET).
  server.keepAliveTimeout = 120_000;
  server.on('clientError', (_err, socket) => {
    if (socket.writable)
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    socket.destroy();
  });

  const port = await listenOn(server, opts.port ?? 0, host, (err) =>
    state.log('ERROR', 'compute emulator listener error', { error: err.message }),
  );
  const display = host.includes(':') ? `[${host}]` : host;
  state.log('INFO', 'compute emulator listening', { url: `http://${display}:${port}`, zones: state.zones });

  let stopping: Promise<void> | null = null;
  return {
    url: `http://${display}:${port}`,
    host,
    port,
    endpoint: `${host}:${port}`,
    admin,
    stop() {
      stopping ??= (async () => {
        await admin.reset();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await secrets?.close();
        if (logFile) await new Promise<void>((resolve) => logFile?.end(resolve));
      })();
      return stopping;
    },
  };
}
