// Reads a request body once, up to a limit, into Hono's body cache, where c.req.text(), .json(),
// .arrayBuffer() and .parseBody() — and the zod validators through them — find it. On Node it reads the
// IncomingMessage itself: going through c.req.raw.body would have @hono/node-server build a WHATWG
// Request, an AbortController and a web stream around the socket for every request, which was the largest
// single cost of a lease request in the API's CPU profile. Without Node (app.request() in tests) it reads
// the web stream. A body over the limit is never read to its end: the caller answers 413 and closes.
import { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { ApiError } from '../errors.js';

// Fatal: a body that is not UTF-8 is refused (400 invalid_json, as RFC 8259 has JSON be UTF-8), never
// stored with U+FFFD where its bytes were — a silent change of what the caller sent.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** True when the body is at most `maxBytes` (and now cached); false when it is larger. */
export async function readBody(c: Context, maxBytes: number): Promise<boolean> {
  const cache = c.req.bodyCache;
  if (cache.arrayBuffer) return (await cache.arrayBuffer).byteLength <= maxBytes;
  const declared = c.req.header('content-length');
  const chunked = c.req.header('transfer-encoding') !== undefined;
  if (!chunked && declared !== undefined && Number(declared) > maxBytes) return false;
  const incoming = unreadIncoming(c);
  const bytes = !incoming
    ? await readStream(c.req.raw.body, maxBytes)
    : !chunked && (declared === undefined || declared === '0')
      ? new Uint8Array(0) // RFC 9112 §6.3: a request without Content-Length or Transfer-Encoding has no body
      : await readIncoming(incoming, maxBytes);
  if (bytes === null) return false;
  // Decoded first: a body refused as not UTF-8 leaves nothing cached that a lenient decode could read.
  const text = decodeUtf8(bytes);
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  // Hono keeps promises in the cache (its typings say values): c.req.json() calls .then on the entry.
  const promised = cache as unknown as Record<'arrayBuffer' | 'text', Promise<unknown>>;
  promised.arrayBuffer = Promise.resolve(buffer);
  promised.text = Promise.resolve(text);
  return true;
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ApiError(400, 'invalid_json', 'the request body is not UTF-8');
  }
}

/** The Node request behind @hono/node-server, if nothing has started reading it. */
function unreadIncoming(c: Context): IncomingMessage | null {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return incoming instanceof IncomingMessage && !incoming.readableDidRead && incoming.readableFlowing === null
    ? incoming
    : null;
}

const endedEarly = () => new ApiError(400, 'invalid_request', 'the request body ended early');

function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Uint8Array | null> {
  return new Promise((resolve, reject) => {
    // The client may have gone while an earlier middleware awaited (worker auth does): Node has then
    // destroyed the request already, and its 'close' will not come again.
    if (incoming.destroyed) {
      reject(endedEarly());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('close', onClose);
      incoming.off('error', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        incoming.pause();
        resolve(null);
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks, size));
    };
    // The client went away (or the socket failed) before the body ended: nobody is there to answer.
    const onClose = () => {
      done();
      reject(endedEarly());
    };
    incoming.on('data', onData);
    incoming.once('end', onEnd);
    incoming.once('close', onClose);
    incoming.once('error', onClose);
  });
}

async function readStream(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}
