// The HTTP listener (Cloud Run's $PORT): POST /v1/fetch (natively, fetch-handler.ts) and /healthz, /readyz,
// /metrics in a Hono app, both built from plain parameters. Fetch callers authenticate with `Authorization: Bearer <token>`, or with a
// client user as `Proxy-Authorization: Basic` or `Authorization: Basic`. Behind Cloud Run IAM the caller's
// identity token goes in X-Serverless-Authorization, leaving Authorization to us (docs/deploy.md):
// Proxy-Authorization is documented as stripped for Cloud Run functions, so nothing relies on it there.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { createFetchHandler, type FetchHandlerDeps } from './fetch-handler.js';
import type { PromRecorder } from './metrics.js';
import type { SocketCounts } from './sockets.js';
import type { GatewayWorker } from './worker.js';

export interface HttpAppDeps extends FetchHandlerDeps {
  metrics: PromRecorder;
  sockets: SocketCounts;
  worker: GatewayWorker;
  version: string;
  /** Controller mode: the session's state (registered, ACK bound, message counters). */
  control?: () => Record<string, unknown>;
}

export function createHttpApp(deps: HttpAppDeps) {
  const app = new Hono();
  const health = () => {
    const s = deps.worker.snapshot();
    return {
      phase: deps.worker.phase(),
      accepting: deps.worker.accepting,
      version: deps.version,
      snapshot: s
        ? {
            version: s.version,
            ownershipEpoch: s.ownershipEpoch,
            proxies: s.upstreams.size,
            suspect: s.suspectUpstreams,
          }
        : null,
      sockets: { ...deps.sockets },
      load: deps.worker.totals(),
      outcomes: { queued: deps.worker.outcomes.size, dropped: deps.worker.outcomes.dropped },
      ...(deps.control ? { control: deps.control() } : {}),
    };
  };
  app.get('/healthz', (c) => c.json({ ok: true, ...health() }));
  app.get('/readyz', (c) => c.json(health(), deps.worker.accepting ? 200 : 503));
  app.get('/metrics', async (c) =>
    c.text(await deps.metrics.registry.metrics(), 200, { 'content-type': deps.metrics.registry.contentType }),
  );

  app.notFound((c) => c.json({ error: 'not_found' }, 404));
  app.onError((err, c) => {
    deps.log.error('http handler failed', { error: err.message, path: c.req.path });
    return c.json({ error: 'internal' }, 500);
  });
  return app;
}

/**
 * The `/v1/fetch` path as it reached the Hono route before: the query ignored, dot segments resolved (the
 * adaptor's WHATWG URL), percent-encoding decoded (Hono's router). The common case costs one comparison.
 */
function isFetchPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/v1/fetch') return true;
  if (!path.includes('%') && !path.includes('.')) return false;
  try {
    return decodeURI(new URL(path, 'http://h').pathname) === '/v1/fetch';
  } catch {
    return false;
  }
}

/**
 * The most fetches that may wait on one connection behind the one running. No ordinary HTTP client
 * pipelines that deep (browsers do not pipeline at all; the clients that do keep a handful in flight), and
 * a waiting fetch costs its parsed request and response objects (~2.3 KB of heap for a ~230-byte
 * request): Node stops parsing a connection only once written answers back up, and here one small answer
 * is written at a time, so without a bound one connection that pipelined requests and never read held
 * every one of them — half a GB from a 46 MB upload, credentials or none.
 */
export const MAX_PIPELINED_FETCHES = 32;

/** The outcome of a fetch refused because too many were pipelined ahead of it (the connection is closed). */
export const PIPELINED_TOO_DEEP = 'pipelined_too_deep';

/**
 * One /v1/fetch at a time per connection: `run` once the fetches before it on its connection are over.
 * Node emits requests pipelined on a connection at once, each response queued behind the earlier ones, so
 * one authenticated connection held an upstream slot per request it pipelined (50 in one write: 50 in
 * flight) for answers that leave one by one anyway: HTTP/1.1 answers in order, and a fetch that waits for
 * the one before it costs a client nothing. Over means its response closed — written whole or cut — or its
 * connection did; a fetch whose connection closed while it waited is not started, counted as any request
 * whose client left first. At most MAX_PIPELINED_FETCHES wait: one more, and the connection is closed
 * without an answer, that fetch and every one waiting counted `pipelined_too_deep` (as are those Node still
 * parses from the read it was in), and the running one called off as when its client leaves. Closed, not
 * paused: reading the running request's body resumes the socket.
 */
function oneFetchAtATime(recorder: HttpAppDeps['recorder']) {
  // Present while a fetch runs on the socket: the ones waiting behind it, in order. Each start answers
  // whether it started.
  const waiting = new WeakMap<Socket, (() => boolean)[]>();
  // Connections closed for pipelining too deep: what Node still emits from the read it was parsing.
  const refused = new WeakSet<Socket>();
  const next = (socket: Socket) => {
    const queue = waiting.get(socket);
    // A loop, not a call from each skipped start to the next: a connection that closed with thousands
    // pipelined would skip them all in one deep stack.
    for (let start = queue?.shift(); start; start = queue?.shift()) if (start()) return;
    waiting.delete(socket);
  };
  const refuse = (socket: Socket, queue: (() => boolean)[]) => {
    // The waiting starts (each holding its request and response) are let go of here, not when the close
    // comes round to them.
    for (let n = queue.length + 1; n > 0; n--) recorder.request('fetch', '-', PIPELINED_TOO_DEEP);
    queue.length = 0;
    refused.add(socket);
    socket.destroy();
  };
  return (req: IncomingMessage, res: ServerResponse, run: () => void): void => {
    const socket = req.socket;
    if (refused.has(socket)) return void recorder.request('fetch', '-', PIPELINED_TOO_DEEP);
    const start = () => {
      if (socket.destroyed) {
        recorder.request('fetch', '-', 'client_closed');
        return false;
      }
      const over = () => {
        res.off('close', over);
        socket.off('close', over);
        next(socket);
      };
      // The connection's too: a response never given the socket (its connection gone first) never closes.
      res.once('close', over);
      socket.once('close', over);
      run();
      return true;
    };
    const queue = waiting.get(socket);
    if (queue) {
      if (queue.length < MAX_PIPELINED_FETCHES) queue.push(start);
      else refuse(socket, queue);
      return;
    }
    waiting.set(socket, []);
    if (!start()) next(socket);
  };
}

const isFetch = (req: IncomingMessage) => req.method === 'POST' && isFetchPath(req.url ?? '');

/**
 * The listener's request handler: POST /v1/fetch natively (fetch-handler.ts: the data path, where the
 * adaptor's web objects cost as much CPU as the fetch), one at a time per connection, everything else
 * through the Hono app. `checkContinue` is for the server's event of that name.
 */
export function createHttpListener(deps: HttpAppDeps, hostname?: string) {
  const fetch = createFetchHandler(deps);
  const inTurn = oneFetchAtATime(deps.recorder);
  const rest = getRequestListener(createHttpApp(deps).fetch, { hostname });
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    if (isFetch(req)) inTurn(req, res, () => void fetch.serve(req, res));
    else void rest(req, res);
  };
  /**
   * A request with `Expect: 100-continue`. Without a listener for it Node answers 100 Continue itself, so
   * a /v1/fetch without credentials, or declaring a body over the limit, was invited to upload its body —
   * then drained, up to 64 MiB — before its 401 or 413. A fetch's head is judged first, as it is without
   * the Expect; refused, no 100 goes out. Anything else is invited as Node did.
   */
  const checkContinue = (req: IncomingMessage, res: ServerResponse): void => {
    if (isFetch(req) && !fetch.checkContinue(req, res)) return;
    res.writeContinue();
    listener(req, res);
  };
  return Object.assign(listener, { checkContinue });
}
