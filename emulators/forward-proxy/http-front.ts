// The HTTP side of the proxy: node's parser frames requests (keep-alive, bodies, pipelining) and
// hands over CONNECTs; this decides what each one gets: a tunnel, a forward, 400, 407, or nothing at
// all while the hang fault is on. A CONNECT to a port outside the allowed ones is 403 before any
// credential is looked at, as squid's `http_access deny CONNECT !SSL_ports` comes before its
// `deny !authenticated`.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ProxyContext, ProxyCounters } from './context.js';
import { forwardRequest } from './forward.js';
import { PROXY_AUTHENTICATE, refuse } from './responses.js';
import { parseAbsoluteTarget, parseAuthority } from './target.js';
import { openTunnel } from './tunnel.js';

/**
 * A non-listening http.Server: the proxy's own listener feeds it sockets via 'connection', and emits
 * 'listening' on it whenever that listener starts (see startHeadTimeouts).
 */
export function createHttpFront(ctx: ProxyContext, counters: ProxyCounters): Server {
  const http = createServer({
    noDelay: true,
    headersTimeout: ctx.headersTimeoutMs,
    // The whole-request bound would also cut off a slow upload of a large body; stalls are the idle
    // timeout's business, and a head that never ends is headersTimeout's.
    requestTimeout: 0,
    // How often node sweeps for expired heads: a quarter of the bound keeps the overshoot small.
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(ctx.headersTimeoutMs / 4))),
  });
  // Node aborts a request whose client half-closes unless told otherwise (squid's half_closed_clients).
  (http as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  http.keepAliveTimeout = ctx.idleTimeoutMs;

  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (ctx.hanging()) return holdRequest(req);
    const target = parseAbsoluteTarget(req.url);
    if (!target) {
      counters.badRequests++;
      const body = '400 Bad Request: a proxy request needs an absolute http:// URI or CONNECT\n';
      res.writeHead(400, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const verdict = ctx.authorize(req.headers['proxy-authorization']);
    if (verdict === true) return forwardRequest(ctx, req, res, target);
    if (verdict === false) return denyRequest(res);
    verdict.then(
      (ok) => {
        if (res.destroyed) return;
        if (ok) forwardRequest(ctx, req, res, target);
        else denyRequest(res);
      },
      () => denyRequest(res),
    );
  });

  http.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const client = socket as Socket;
    if (ctx.hanging()) return void client.resume();
    const target = parseAuthority(req.url ?? '');
    if (target && !ctx.connectAllowed(target.port)) {
      counters.forbidden++;
      return refuse(client, 403);
    }
    const verdict = ctx.authorize(req.headers['proxy-authorization']);
    const proceed = (ok: boolean) => {
      if (client.destroyed) return;
      if (!ok) {
        counters.authFailures++;
        return refuse(client, 407);
      }
      if (!target) {
        counters.badRequests++;
        return refuse(client, 400);
      }
      counters.tunnels++;
      openTunnel(ctx, client, head, target);
    };
    if (typeof verdict === 'boolean') proceed(verdict);
    else verdict.then(proceed, () => proceed(false));
  });

  http.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // Raw bytes only where no response has started on this socket (node's own rule), else just close.
    const inFlight = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) return void socket.destroy();
    counters.badRequests++;
    const status =
      err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    refuse(socket, status);
  });

  function denyRequest(res: ServerResponse): void {
    counters.authFailures++;
    const body = '407 Proxy Authentication Required\n';
    res.writeHead(407, {
      'Proxy-Authenticate': PROXY_AUTHENTICATE,
      'Content-Type': 'text/plain',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
  }

  /** A hung VM reads nothing back: the request stays unanswered until the client gives up. */
  function holdRequest(req: IncomingMessage): void {
    req.resume();
    req.socket.setTimeout(ctx.idleTimeoutMs);
  }

  return http;
}

/**
 * Node enforces headersTimeout only from a sweep it starts when the http.Server emits 'listening'
 * (lib/_http_server.js: `this.on('listening', setupConnectionsTracking)`); a server fed through
 * 'connection' never listens, so without this a client trickling one header byte at a time, each
 * resetting the idle timer, held its connection forever and the 408 branch above never ran. Stop the
 * sweep with `http.close()`.
 */
export function startHeadTimeouts(http: Server): void {
  http.emit('listening');
}
