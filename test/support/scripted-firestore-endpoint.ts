// A Firestore endpoint — gRPC over plaintext HTTP/2, what the client speaks to an emulator — that answers
// nothing by itself: each call gets its response headers and is then held until the test ends it with a
// status. For what the real emulator cannot be made to do on cue: fail one read at the instant a test
// chooses while another stays unanswered. Headers first matters: the client's transport retries a stream
// that fails before any response itself (gax's retry-request, a few seconds of its own); one that fails
// after them reaches the Firestore client's own retry at once, with its backoff (1 s ± 50 % first).
import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { pollUntil } from './poll.js';

/** gRPC status codes the tests use. */
export const GrpcStatus = { PERMISSION_DENIED: 7, UNAVAILABLE: 14 } as const;

export interface HeldCall {
  /** The RPC's method name: `RunQuery`, `RunAggregationQuery`, `Listen`… */
  method: string;
  /**
   * Whether the client has finished sending: at once for a read (one request, then half-closed); for a
   * listener (`Listen`, both ways), once it is stopped — or whether the call is over.
   */
  readonly clientEnded: boolean;
  /** Ends the call with this status (no message of the response's own: the client sees no data). */
  fail(code: number, message?: string): void;
}

export interface ScriptedFirestore {
  /** For FIRESTORE_EMULATOR_HOST. */
  host: string;
  /** Every call, in the order it arrived. */
  calls: HeldCall[];
  /** The first call of `method` not yet seen by an earlier next(`method`), once it has arrived. */
  next(method: string, timeoutMs?: number): Promise<HeldCall>;
  close(): Promise<void>;
}

export async function scriptedFirestore(): Promise<ScriptedFirestore> {
  const calls: HeldCall[] = [];
  const taken = new Set<HeldCall>();
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('error', () => {});
    s.once('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const method =
      String(headers[':path'] ?? '')
        .split('/')
        .pop() ?? '';
    let clientEnded = false;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.resume(); // the request's messages: read and dropped, so that the client's end arrives
    const done = () => {
      clientEnded = true;
    };
    stream.once('end', done);
    stream.once('close', done);
    calls.push({
      method,
      get clientEnded() {
        return clientEnded;
      },
      fail(code, message = 'scripted failure') {
        if (stream.destroyed || stream.writableEnded) return;
        stream.once('wantTrailers', () =>
          stream.sendTrailers({ 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) }),
        );
        stream.end();
      },
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    calls,
    next: (method, timeoutMs = 30_000) =>
      pollUntil(
        () => calls.find((c) => c.method === method && !taken.has(c)),
        (c) => c !== undefined,
        timeoutMs,
        `a ${method} call`,
        10,
      ).then((c) => {
        taken.add(c as HeldCall);
        return c as HeldCall;
      }),
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
