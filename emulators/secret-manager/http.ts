// The HTTP edges: bounded body reading, JSON decoding that never throws past the handler, JSON replies.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, invalidArgument } from './api-error.js';

/** A 64 KiB payload is ~87 KiB of base64; anything far above that is refused before it is buffered. */
export const MAX_BODY_BYTES = 256 * 1024;

export class BodyTooLarge extends Error {}

/**
 * Reads the body; past `limit` it keeps draining (so the client reads a proper 400 rather than a reset)
 * but buffers nothing, and past 64× the limit it gives up on the connection.
 */
export async function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit * 64) {
      req.destroy();
      throw new BodyTooLarge();
    }
    if (size <= limit) chunks.push(chunk as Buffer);
  }
  if (size > limit) throw new BodyTooLarge();
  return Buffer.concat(chunks);
}

/** Empty body → undefined; malformed → INVALID_ARGUMENT with Google's wording. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw invalidArgument(`Invalid JSON payload received. ${err instanceof Error ? err.message : ''}`.trim());
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, close = false): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: ApiError, close = false): void {
  sendJson(res, err.httpStatus, err.toBody(), close);
}

export const tooLarge = () =>
  new ApiError('INVALID_ARGUMENT', `Request payload size exceeds the limit: ${MAX_BODY_BYTES} bytes.`);
