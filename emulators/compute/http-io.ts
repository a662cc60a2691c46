// Request bodies read with a cap, JSON responses written once. A body over the cap is answered the
// way Google's front end answers it (400 "Request payload size exceeds the limit") and the
// connection is closed rather than drained.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, GceError } from './errors.js';

export const BODY_LIMIT_BYTES = 512 * 1024;

export const payloadTooLarge = (limit: number) =>
  badRequest(`Request payload size exceeds the limit: ${limit} bytes.`);

export function readBody(req: IncomingMessage, limit = BODY_LIMIT_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(payloadTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(payloadTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
    req.once('aborted', () => reject(new Error('client aborted')));
  });
}

/** An empty body is an empty object; anything unparseable is GCE's 400. */
export function parseJsonBody(body: Buffer): unknown {
  const text = body.toString('utf8').trim();
  if (text === '') return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw badRequest(
      `Invalid JSON payload received. ${err instanceof Error ? err.message : 'Unexpected token.'}`,
    );
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=UTF-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendGceError(res: ServerResponse, err: GceError, close = false): void {
  sendJson(res, err.code, err.toBody(), close ? { ...err.headers, Connection: 'close' } : err.headers);
}

export { GceError };
