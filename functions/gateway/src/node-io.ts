// Request body in, JSON out, on Node's own http objects: the pieces of the Hono adaptor the native
// fetch handler (fetch-handler.ts) still needs, with the adaptor's observable behaviour.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';

// @hono/node-server's bounds for draining a body nobody read once the answer went out.
const DRAIN_TIMEOUT_MS = 500;
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/** The whole body, or `too_large` as soon as more than `max` bytes came, or `failed` if the client left. */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too_large' | 'failed'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (v: Buffer | 'too_large' | 'failed') => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onFail);
      req.off('close', onFail);
      resolve(v);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.pause();
      finish('too_large');
    };
    const onEnd = () => finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    const onFail = () => finish('failed');
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onFail);
    req.once('close', onFail);
  });
}

/**
 * Once the answer is out, what is left of an unread body is read and dropped so the connection can serve
 * the next request — for at most 500 ms and 64 MiB, then the socket is closed.
 */
export function drainUnread(req: IncomingMessage, out: ServerResponse): void {
  out.once('finish', () => {
    if (req.complete || req.destroyed) return;
    let bytes = 0;
    const stop = () => {
      clearTimeout(timer);
      req.off('data', onData);
    };
    const force = () => {
      stop();
      if (!req.socket.destroyed) req.socket.destroySoon();
    };
    const timer = setTimeout(force, DRAIN_TIMEOUT_MS);
    timer.unref();
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_DRAIN_BYTES) force();
    };
    req.on('data', onData);
    req.once('end', stop);
    req.once('error', stop);
    req.resume();
  });
}

/** Hono's `c.json(body, status, headers)` as @hono/node-server wrote it. */
export function sendJson(
  out: ServerResponse,
  status: number,
  body: object,
  headers: OutgoingHttpHeaders = {},
) {
  if (out.headersSent) return void out.destroy();
  const text = JSON.stringify(body);
  out.writeHead(status, {
    'content-type': 'application/json',
    ...headers,
    'Content-Length': Buffer.byteLength(text),
  });
  out.end(text);
}
