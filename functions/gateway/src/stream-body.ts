// The target's body to a /v1/fetch client (fetch-handler.ts): streamed with backpressure, cut off —
// never ended as if complete — when it is over the cap, broken, or dumped under us.
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The target's body to the client with backpressure. Past `max` bytes, or if either side breaks, both
 * connections are destroyed: the client sees a cut-off response, never an unbounded or a complete-looking
 * one (the chunk that crosses the limit is not sent). `done` runs once, whichever way it ends — a whole
 * body's once its tail has been written to the client, not merely queued; `broken` when the target's side
 * broke off first (not the cap, not the client leaving, not a response dumped by its request's destroy).
 * Returns the cut for the fetch's deadline: both connections destroyed and `done` run at once — not at the
 * client response's 'close', which one queued behind another on its connection (pipelined) emits only
 * once it has the socket, and never if the connection closes first: the connection's own 'close' is
 * watched for that.
 */
export function streamBody(
  res: IncomingMessage,
  out: ServerResponse,
  max: number,
  done: (broken: boolean) => void,
  /**
   * The client's body ends at the close (an HTTP/1.0 client, no length to send it): a cut then resets the
   * connection, so the client reads an error, not an ordinary end that looks like a whole body.
   */
  closeDelimited = false,
): () => void {
  let seen = 0;
  let ended = false;
  let released = false;
  // The client's connection: a response still queued behind another on it has no socket of its own, and
  // emits neither 'finish' nor 'close' when the client goes — its slot was held until the deadline, past a
  // SIGTERM drain that then found nothing left to close.
  const conn = out.req?.socket;
  const onConnClose = () => {
    if (!out.writableFinished) abort();
  };
  const release = (broken: boolean) => {
    if (released) return;
    released = true;
    // A kept-alive connection carries many fetches: the listener goes with this one.
    conn?.off('close', onConnClose);
    done(broken);
  };
  const abort = (broken = false) => {
    res.destroy();
    if (closeDelimited) out.socket?.resetAndDestroy();
    out.destroy();
    release(broken);
  };
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > max) return abort();
    if (!out.write(chunk)) {
      res.pause();
      out.once('drain', () => res.resume());
    }
  };
  res.on('data', onData);
  res.once('end', () => {
    // A request destroyed under its response (the fetch deadline) dumps what was still buffered — Node
    // removes every 'data' listener — and the response still ends: bytes are missing, so this must not
    // look like a complete answer.
    if (!res.listeners('data').includes(onData)) return abort();
    ended = true;
    // The slot goes back once the tail has left for the client, not when the target's last byte came in:
    // up to a high-water mark and a chunk may still be queued for a slow reader, and a SIGTERM drain that
    // saw no slot in use destroyed the client with it unsent (a client that leaves: 'close' below).
    out.end(() => release(false));
  });
  res.once('error', () => abort(true));
  res.once('close', () => {
    if (!ended) abort(true);
  });
  out.once('close', () => {
    if (!out.writableFinished) abort();
  });
  conn?.once('close', onConnClose);
  return () => abort();
}
