// Absolute-form requests (`GET http://host/path`, RFC 9112 §3.2.2): re-sent to the origin without
// hop-by-hop fields, the response streamed back. Node's HTTP machinery frames both sides (bodies,
// chunking, keep-alive), so several requests on one client connection work as they should.
import { type ClientRequest, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { ProxyContext } from './context.js';
import { addLeakHeaders, endToEndHeaders, withHost } from './headers.js';
import type { AbsoluteTarget } from './target.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

function plain(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${status} ${message}\n`;
  // The reason given, not left to node: after a refused relayHead the response still holds the origin's.
  res.writeHead(status, message, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const timeoutError = (message: string) => Object.assign(new Error(message), { code: 'ETIMEDOUT' });

/** A bodiless safe request may be re-sent when a pooled upstream connection turns out to be stale. */
function replayable(req: IncomingMessage): boolean {
  return (
    SAFE_METHODS.has(req.method ?? '') &&
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  );
}

/** What writeHead accepts in a reason phrase (checkInvalidHeaderChar, node's lib/_http_common.js). */
const RELAYABLE_REASON = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Writes the origin's status line and end-to-end fields; false when node refuses them. Node's parser
 * takes any byte but CR and LF in a reason phrase and any three digits as a status code, writeHead does
 * not (ERR_INVALID_CHAR, ERR_HTTP_INVALID_STATUS_CODE below 100); thrown from here, inside the upstream
 * parser's callback, that was an uncaughtException, and `npm start` — the process that runs every
 * emulated VM's proxy — shut the whole plane down over one site's status line. A reason phrase is
 * optional and means nothing to clients (RFC 9112 §4): a bad one is dropped and node sends the code's own.
 */
function relayHead(res: ServerResponse, origin: IncomingMessage): boolean {
  const reason = origin.statusMessage ?? '';
  try {
    res.writeHead(
      origin.statusCode ?? 502,
      RELAYABLE_REASON.test(reason) ? reason : undefined,
      endToEndHeaders(origin.rawHeaders),
    );
    return true;
  } catch {
    return false;
  }
}

export function forwardRequest(
  ctx: ProxyContext,
  req: IncomingMessage,
  res: ServerResponse,
  target: AbsoluteTarget,
): void {
  const done = ctx.beginForward();
  let headers = withHost(endToEndHeaders(req.rawHeaders), target.authority);
  if (ctx.leaking()) headers = addLeakHeaders(headers, req.socket.remoteAddress ?? 'unknown');
  let current: ClientRequest | null = null;

  res.once('close', () => {
    // Whatever ends the exchange (finished, client gone, error), the upstream request goes with it.
    if (!res.writableFinished) current?.destroy();
    done();
  });
  req.once('error', () => current?.destroy());
  send(true);

  function send(mayRetry: boolean): void {
    const upstream = request({
      host: target.host,
      port: target.port,
      method: req.method,
      path: target.path,
      headers,
      // its source address, for a VM, is the agent's to choose (dial.ts)
      agent: ctx.agent,
    });
    current = upstream;
    const connectTimer = setTimeout(
      () => upstream.destroy(timeoutError('connect timeout')),
      ctx.connectTimeoutMs,
    );
    upstream.once('socket', (socket) => {
      if (!socket.connecting) clearTimeout(connectTimer);
      else socket.once('connect', () => clearTimeout(connectTimer));
    });
    upstream.setTimeout(ctx.responseTimeoutMs, () => upstream.destroy(timeoutError('upstream timeout')));

    upstream.once('response', (origin) => {
      upstream.setTimeout(ctx.idleTimeoutMs);
      if (!relayHead(res, origin)) {
        ctx.log('DEBUG', 'forward target sent a response head node cannot relay', {
          target: `${target.host}:${target.port}`,
          status: origin.statusCode,
        });
        upstream.destroy();
        plain(res, 502, 'Bad Gateway');
        return;
      }
      origin.pipe(res);
      origin.once('error', () => res.destroy());
      origin.once('aborted', () => res.destroy());
    });
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(connectTimer);
      if (res.destroyed) return;
      if (
        mayRetry &&
        !res.headersSent &&
        upstream.reusedSocket &&
        err.code === 'ECONNRESET' &&
        replayable(req)
      ) {
        return send(false);
      }
      ctx.log('DEBUG', 'forward target failed', { target: `${target.host}:${target.port}`, code: err.code });
      plain(
        res,
        err.code === 'ETIMEDOUT' ? 504 : 502,
        err.code === 'ETIMEDOUT' ? 'Gateway Timeout' : 'Bad Gateway',
      );
    });
    upstream.once('close', () => clearTimeout(connectTimer));
    if (mayRetry) req.pipe(upstream);
    else upstream.end();
  }
}
